"""health.device_majors judges the /dev/nvidia* majors as found, before NVML/CUDA initialisation could repair them
(issue 11, part 6). The recorded H200 result is changed as the probe would record the incident, with the probe's
own sentence functions, and checked against the schema."""
from __future__ import annotations

import copy

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from helpers import health_ok, judge_one, one

from probe_packages.health.device_nodes import mismatch_sentence, node_changes

RECREATION = ("/dev/nvidia-uvm was major 504 when the probe started and 238 after NVML/CUDA initialised: re-created by "
              "the driver while the probe ran as root: a container or a non-root user gets no such repair; its device "
              "rules must allow major 238")


def validated(envelope: dict) -> dict:
    schema_validator("health.schema.json").validate(envelope["data"])
    return envelope


def with_second_reading(nodes: dict, after_nodes: list) -> None:
    nodes["probe_ran_as_root"] = True
    nodes["after_init"] = {"proc_devices_nvidia_majors": nodes["proc_devices_nvidia_majors"], "nodes": after_nodes,
                           "changes": node_changes(nodes["nodes"], after_nodes, as_root=True)}


def stale_uvm_repaired_during_probe() -> dict:
    """/dev/nvidia-uvm was major 504 as found; NVML, run as root, re-created it with 238 before the second reading."""
    envelope = health_ok()
    nodes = envelope["data"]["device_nodes"]
    repaired = copy.deepcopy(nodes["nodes"])
    for entry in repaired:
        entry.pop("open_rw", None)
    uvm = next(entry for entry in nodes["nodes"] if entry["path"] == "/dev/nvidia-uvm")
    uvm.update(major=504, drivers_for_major=[], major_matches=False)
    nodes["mismatches"] = [{"path": "/dev/nvidia-uvm", "sentence": mismatch_sentence(uvm)}]
    with_second_reading(nodes, repaired)
    return validated(envelope)


def test_stale_node_as_found_fails_although_the_second_reading_is_fine():
    verdict = judge_one(stale_uvm_repaired_during_probe())
    check = one(verdict, "health.device_majors")
    assert check.status == "fail" and check.value == ["/dev/nvidia-uvm"]
    assert check.reason.startswith("/dev/nvidia-uvm has major 504 (no driver in /proc/devices) but nvidia-uvm now has "
                                   "major 238: the node is stale")
    assert check.reason.endswith("; " + RECREATION)
    assert verdict.verdict == "fail"


def test_a_node_created_during_the_probe_warns_with_its_sentence():
    envelope = health_ok()
    nodes = envelope["data"]["device_nodes"]
    after = copy.deepcopy(nodes["nodes"])
    nodes["nodes"] = [entry for entry in nodes["nodes"] if not entry["path"].startswith("/dev/nvidia-uvm")]
    with_second_reading(nodes, after)
    check = one(judge_one(validated(envelope)), "health.device_majors")
    assert check.status == "warn"
    assert check.value == ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    assert "matched /proc/devices when the probe started, but /dev/nvidia-uvm was missing when the probe started and " \
           "appeared (major 238, minor 0, mode 0666)" in check.reason
    assert "a container or a non-root user gets no such repair; its device rules must allow major 238" in check.reason


def test_nothing_changed_during_the_probe_passes():
    envelope = health_ok()
    nodes = envelope["data"]["device_nodes"]
    with_second_reading(nodes, copy.deepcopy(nodes["nodes"]))
    check = one(judge_one(validated(envelope)), "health.device_majors")
    assert check.status == "pass" and check.reason == "every /dev/nvidia* major (7 nodes) matches /proc/devices"
