"""Runs the p2p probe for real on this machine and checks its envelope against the envelope and p2p schemas.

Without 2 GPUs (this CPU-only machine) the probe is unavailable, says why, and still writes schema-valid data.
"""
import copy
import os

import jsonschema
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import assert_foreign_processes_recorded, assert_schema_header, probe_help, run_probe, shadow_module, validate_envelope


def _run(tmp_path, params=None, env=None):
    return run_probe(tmp_path, "p2p", params, env)


def test_schema_header():
    assert_schema_header("p2p")


def test_probe_runs_here_and_matches_the_schemas(tmp_path):
    envelope = _run(tmp_path, {"quick": True})
    validate_envelope(envelope, "p2p")
    assert envelope["probe"] == "p2p" and "torch_version" in envelope["environment"]
    data = envelope["data"]
    assert_foreign_processes_recorded(data)
    if envelope["status"] == "unavailable":
        count = len(data["devices"])
        assert count < 2 and envelope["reason"] == "%d GPU(s) visible: no pair to measure" % count
        assert data["pairs"] == [] and data["errors"] == [] and "unavailable" in data["topology"]
        assert data["plan"]["sizes_bytes"] == [64 << 20, 256 << 20] and "not fitted" in data["plan"]["sizes_note"]
        assert envelope["duration_s"] < 60
    else:
        count = len(data["devices"])
        assert envelope["status"] == "ok", envelope["reason"]
        assert len(data["pairs"]) == count * (count - 1) and all(pair["verified"] for pair in data["pairs"])


def test_bad_parameters_are_an_error_envelope(tmp_path):
    envelope = _run(tmp_path, {"sizes_mib": "big"})
    assert envelope["status"] == "error" and "sizes_mib" in envelope["reason"]
    envelope = _run(tmp_path, {"iterations": 0})
    assert envelope["status"] == "error" and "iterations" in envelope["reason"]
    envelope = _run(tmp_path, {"pairs": "all"})
    assert envelope["status"] == "error" and "unknown parameter 'pairs'" in envelope["reason"]
    schema_validator("envelope.schema.json").validate(envelope)


def test_without_torch_it_is_unavailable_and_help_still_works(tmp_path):
    env = dict(os.environ, PYTHONPATH=shadow_module(tmp_path))
    envelope = _run(tmp_path, env=env)
    assert envelope["status"] == "unavailable" and "torch" in envelope["reason"] and envelope["data"] == {}
    schema_validator("envelope.schema.json").validate(envelope)
    completed = probe_help("p2p", env)
    assert completed.returncode == 0 and b"latency_copies" in completed.stdout


SWEEP = [{"size_bytes": 64 << 20, "gbps": 380.0, "time_per_copy_s": 0.000176602, "verified": True},
         {"size_bytes": 256 << 20, "gbps": 390.0, "time_per_copy_s": 0.000688296, "verified": True}]
SECTION = {"sweep": SWEEP, "plateau": {"found": True, "sizes_bytes": [64 << 20, 256 << 20], "value_gbps": 385.0,
                                       "reason": "2 consecutive size(s) within 3 % of their median"},
           "headline_gbps": 385.0, "headline_source": "plateau", "spin_covered_enqueue": True}
PAIR = {"src": 0, "dst": 1, "src_uuid": "GPU-a", "dst_uuid": "GPU-b", "link_class": "NV18", "link_kind": "nvlink",
        "nvlink_count": 18, "nvlink_via": "nvswitch", "pcie_path": "SYS", "numa_node_src": 0, "numa_node_dst": 0,
        "same_numa": True, "peer_access": True, "unidirectional": SECTION,
        "latency": {"size_bytes": 8, "median_us": 2.5, "samples": 1, "copies_per_sample": 200, "verified": True,
                    "spin_covered_enqueue": True},
        "verified": True}


def _measured_data(tmp_path):
    """The data of a real run here, with one hand-written NV18 pair put in, as 2 H200s would give it."""
    data = _run(tmp_path, {"quick": True, "bidirectional": False})["data"]
    data["pairs"] = [copy.deepcopy(PAIR)]
    return data


def test_a_measured_pair_is_valid_and_garbage_is_not(tmp_path):
    data = _measured_data(tmp_path)
    validator = schema_validator("p2p.schema.json")
    validator.validate(data)
    pair = data["pairs"][0]
    for key, value in (("link_class", "NVLINK"), ("link_kind", "infiniband"), ("pcie_path", "NV18"), ("verified", "yes"),
                       ("nvlink_count", -1), ("peer_access", False), ("numa_node_src", {"unavailable": ""})):
        saved = pair[key]
        pair[key] = value
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(data)
        pair[key] = saved
    pair["verified"] = False  # every copy ran, a destination differed: no pair error
    validator.validate(data)
    del pair["unidirectional"]
    with pytest.raises(jsonschema.ValidationError):  # a pair without an error must carry its measurements
        validator.validate(data)
    pair["error"] = "unidirectional: RuntimeError: boom"
    pair["verified"] = False
    validator.validate(data)
    pair["verified"] = True
    with pytest.raises(jsonschema.ValidationError):  # a failed pair is never verified
        validator.validate(data)
    data["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


def test_a_plateau_claim_must_carry_its_value(tmp_path):
    data = _measured_data(tmp_path)
    validator = schema_validator("p2p.schema.json")
    plateau = data["pairs"][0]["unidirectional"]["plateau"]
    plateau["value_gbps"] = None
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
    plateau.update(found=False, sizes_bytes=[], reason="no plateau")
    validator.validate(data)
    data["pairs"][0]["unidirectional"]["headline_source"] = "maximum"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
