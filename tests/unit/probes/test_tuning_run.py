"""The tuning probe end to end: collect on fake hosts, each result valid against schemas/tuning.schema.json, and a
real run on this machine."""
import json
import os
import sys

import jsonschema
import pytest

import tuning
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import assert_schema_header, run_probe, validate_envelope
from probelib.runner import build_envelope
from tuning_trees import acs_on_switch_port, cpu_machine, downtrained_link, rtx_pro_6000_two_numa

BUILDERS = (rtx_pro_6000_two_numa, acs_on_switch_port, downtrained_link)


def validate(result):
    schema_validator("tuning.schema.json").validate(result.data)
    validate_envelope(build_envelope("tuning", result, "2026-12-01T00:00:00+00:00", 0.01), "tuning")


def unavailable_reasons(node):
    if isinstance(node, dict):
        if set(node) == {"unavailable"}:
            return [node["unavailable"]]
        return [reason for value in node.values() for reason in unavailable_reasons(value)]
    if isinstance(node, list):
        return [reason for value in node for reason in unavailable_reasons(value)]
    return []


def test_schema_header():
    assert_schema_header("tuning")


@pytest.mark.parametrize("builder", BUILDERS)
def test_each_fake_host_is_ok_and_valid(tmp_path, builder):
    result = tuning.collect({}, builder(tmp_path), privileged=True)
    validate(result)
    assert (result.status, result.reason, result.data["errors"]) == ("ok", "", [])
    assert len(result.data["gpus"]) == 8 and len(result.data["pci_devices"]) == 24
    assert result.data["config_space"]["bytes_read_min"] == 4096
    assert [reason for reason in unavailable_reasons(result.data) if "intel_pstate" not in reason] == []


def test_unprivileged_is_ok_and_says_what_needs_root(tmp_path):
    result = tuning.collect({}, rtx_pro_6000_two_numa(tmp_path, privileged=False), privileged=False)
    validate(result)
    assert result.status == "ok"
    reasons = unavailable_reasons(result.data["pci_devices"])
    assert len(reasons) == 24 * 6 and all("gpufleet_become_probes: [tuning]" in reason for reason in reasons)
    assert result.data["config_space"] == {"privileged": False, "bytes_read_min": 64,
                                           "note": result.data["config_space"]["note"]}


def test_the_cpu_machine_is_ok_with_no_gpu(tmp_path):
    """outcome.status_of: the kernel settings were read and nothing failed, so ok (the subject is the host's settings,
    not a GPU)."""
    result = tuning.collect({}, cpu_machine(tmp_path), privileged=True)
    validate(result)
    assert (result.status, result.data["gpus"], result.data["pci_devices"]) == ("ok", [], [])
    assert result.data["kernel"]["vm_swappiness"] == 10


def test_a_section_that_raises_makes_it_partial(tmp_path):
    roots = rtx_pro_6000_two_numa(tmp_path)
    os.rename(os.path.join(roots.sys, "bus"), os.path.join(roots.sys, "bus.gone"))
    result = tuning.collect({}, roots, privileged=True)
    validate(result)
    assert result.status == "partial" and result.reason.startswith("sections that failed: pci (FileNotFoundError")
    assert "unavailable" in result.data["pci_devices"] and "unavailable" in result.data["gpus"]
    assert "not read" in result.data["config_space"]["bytes_read_min"]["unavailable"]
    assert result.data["kernel"]["numa_balancing"] == 0


def test_nothing_read_is_an_error(tmp_path, monkeypatch):
    def broken(*unused):
        raise OSError("no /sys here")
    monkeypatch.setattr(tuning, "read_pci_tree", broken)
    monkeypatch.setattr(tuning, "read_kernel_settings", broken)
    result = tuning.collect({}, cpu_machine(tmp_path), privileged=False)
    validate(result)
    assert result.status == "error" and "pci (OSError: no /sys here), kernel" in result.reason


def test_schema_rejects_garbage(tmp_path):
    data = tuning.collect({}, rtx_pro_6000_two_numa(tmp_path), privileged=True).data
    validator = schema_validator("tuning.schema.json")
    for path, bad in ((("pci_devices", 0, "max_payload_bytes"), 300), (("pci_devices", 0, "role"), "switch"),
                      (("gpus", 0, "root_port"), "17:00.0"), (("kernel", "cmdline_settings"), {"root": "UUID=1"}),
                      (("pci_devices", 0, "acs"), {"present": True}), (("kernel", "numa_balancing"), {"unavailable": ""})):
        broken = json.loads(json.dumps(data))
        node = broken
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = bad
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(broken)
    data["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


def test_probe_runs_here_and_matches_schema(tmp_path):
    envelope = run_probe(tmp_path, "tuning", python=sys.executable)
    validate_envelope(envelope, "tuning")
    assert envelope["probe"] == "tuning" and envelope["data"]["errors"] == []
    assert envelope["status"] == "ok", envelope["reason"]
    assert envelope["data"]["config_space"]["privileged"] is (os.geteuid() == 0)
    kernel = envelope["data"]["kernel"]
    assert isinstance(kernel, dict) and isinstance(kernel["cmdline_settings"], dict)


def test_unknown_parameters_are_refused(tmp_path):
    envelope = run_probe(tmp_path, "tuning", {"pci": True}, python=sys.executable)
    assert envelope["status"] == "error" and "unknown parameter 'pci'" in envelope["reason"]
