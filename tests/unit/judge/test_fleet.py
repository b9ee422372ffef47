"""Fleet-level judgement: peers, drift, unmatched rules, overrides, unreachable hosts."""
from __future__ import annotations

import copy

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import effective_rules
from helpers import GPU1, RIG_OVERRIDES, RUN_OK, as_machine, baselines, health_ok, judge_fleet, judge_one, one, rules


def _host(envelope, overrides=None, groups=None):
    return {"envelopes": {"health": envelope}, "reached": True, "reason": "", "groups": groups or ["rack1"],
            "rule_overrides": RIG_OVERRIDES if overrides is None else overrides}


def _fleet_envelope(number: int, power=(80.4, 80.9), name=None) -> dict:
    """The recorded H200 result as host n: its own UUIDs, slightly different idle power."""
    envelope = as_machine(health_ok(), number)
    for gpu, draw in zip(envelope["data"]["gpus"], power):
        gpu["power"]["draw_w"] = draw
        if name:
            gpu["name"] = name
            gpu["pci"]["device_id"] = "0x1234abcd"
    return envelope


def test_driver_change_since_previous_run_warns():
    earlier = health_ok()
    earlier["data"]["software"]["driver_version"] = "570.133.20"
    verdict = judge_one(health_ok(), previous={"rig": {"health": earlier}})
    check = one(verdict, "drift.driver_version")
    assert check.status == "warn"
    assert check.reason == "driver version changed since run %s: 570.133.20 -> 580.159.04" % RUN_OK
    assert (check.value, check.reference) == ("580.159.04", "570.133.20")
    assert verdict.verdict == "warn"


def test_the_incident_a_kernel_upgrade_moved_the_uvm_major_and_the_command_line():
    earlier = health_ok()
    earlier["data"]["platform"]["cmdline"] = "BOOT_IMAGE=/vmlinuz-6.8.0 ro quiet"
    uvm = [node for node in earlier["data"]["device_nodes"]["nodes"] if node["path"] == "/dev/nvidia-uvm"][0]
    now_major = uvm["major"]
    uvm["major"] = 504
    verdict = judge_one(health_ok(), previous={"rig": {"health": earlier}})
    majors = one(verdict, "drift.device_majors")
    assert majors.status == "warn"
    assert "major changed: /dev/nvidia-uvm 504 -> %d" % now_major in majors.reason
    assert "/dev/nvidia-uvm 504" in majors.reference and "/dev/nvidia-uvm %d" % now_major in majors.value
    cmdline = one(verdict, "drift.kernel_cmdline")
    assert cmdline.status == "warn" and cmdline.reference == "BOOT_IMAGE=/vmlinuz-6.8.0 ro quiet"
    assert one(verdict, "drift.nccl_version").status == "pass"


def test_unchanged_device_nodes_pass():
    check = one(judge_one(health_ok(), previous={"rig": {"health": health_ok()}}), "drift.device_majors")
    assert check.status == "pass" and "the same" in check.reason


def test_swapped_gpu_at_index_1():
    earlier = health_ok()
    earlier["data"]["gpus"][1]["uuid"] = "GPU-aaaaaaaa-0000-0000-0000-000000000001"
    earlier["run_id"] = "20261101T000000Z-000001"
    verdict = judge_one(health_ok(), previous={"rig": {"health": earlier}})
    check = one(verdict, "drift.gpus")
    assert check.status == "warn" and check.gpu_index == 1
    assert ("GPU 1 was GPU-aaaaaaaa-0000-0000-0000-000000000001 in run 20261101T000000Z-000001, now %s: swapped" % GPU1) in check.reason


def test_missing_gpu_since_previous_run_fails():
    current = health_ok()
    del current["data"]["gpus"][1]
    verdict = judge_one(current, previous={"rig": {"health": health_ok()}}, overrides={"health.gpu_count": {"enabled": False}})
    check = one(verdict, "drift.gpus")
    assert check.status == "fail" and "GPU 1 (%s) was present in run %s and is missing now" % (GPU1, RUN_OK) in check.reason
    assert one(verdict, "health.gpu_count").reason == "rule disabled by this host's rule overrides"


def test_idle_power_drift_beyond_noise():
    current = health_ok()
    current["data"]["gpus"][0]["power"]["draw_w"] = 120.0
    check = one(judge_one(current, previous={"rig": {"health": health_ok()}}), "drift.health.idle_power_w", 0)
    assert check.status == "warn" and check.reference == 80.423 and "+49.2 %" in check.reason


def test_fleet_outlier_idling_at_300_w():
    hosts = {"node%d" % n: _host(_fleet_envelope(n, power=(80.0 + n / 10, 80.5 + n / 10))) for n in range(1, 5)}
    hosts["node5"] = _host(_fleet_envelope(5, power=(300.0, 80.7)))
    judgement = judge_fleet("run2", hosts, baselines(), rules())
    hot = one(judgement.hosts["node5"], "fleet.health.idle_power_w", 0)
    assert hot.status == "warn" and hot.value == 300.0
    # sorted: 80.1 80.2 80.3 80.4 80.6 | 80.7 80.7 80.8 80.9 300 -> median 80.65, MAD 0.25, z = 0.6745 * 219.35 / 0.25
    assert ("health.idle_power_w 300 W against the fleet median 80.7 W of h200-sxm (MAD 0.25, 10 values from 5 hosts): "
            "robust z 592 > 3.5") in hot.reason
    assert hot.reference == pytest.approx(80.65) and hot.reference_source.startswith("fleet median of h200-sxm")
    assert one(judgement.hosts["node5"], "fleet.health.idle_power_w", 1).status == "pass"
    assert judgement.hosts["node5"].verdict == "warn"
    for name in ("node1", "node2", "node3", "node4"):
        assert judgement.hosts[name].verdict == "pass", judgement.hosts[name].reasons
    stats = judgement.fleet_statistics["h200-sxm"]["health.idle_power_w"]
    assert stats["count"] == 10 and stats["median"] == pytest.approx(80.65) and stats["unit"] == "W" and stats["hosts"] == 5
    assert judgement.hosts_worst_first()[0].host == "node5"


def test_unknown_sku_still_compared_with_peers():
    name = "NVIDIA H200 Engineering Sample"
    hosts = {"es%d" % n: _host(_fleet_envelope(n, name=name)) for n in range(1, 4)}
    hosts["es3"] = _host(_fleet_envelope(3, power=(250.0, 80.9), name=name))
    judgement = judge_fleet("run2", hosts, baselines(), rules())
    verdict = judgement.hosts["es3"]
    assert verdict.sku is None
    assert verdict.sku_reason.startswith("no baseline matches NVIDIA H200 Engineering Sample, 0x1234abcd, 143771 MiB (its NVML "
                                         "name, PCI device id and memory), so its SKU is unknown")
    group = "unknown:%s" % name
    assert group in judgement.fleet_statistics
    hot = one(verdict, "fleet.health.idle_power_w", 0)
    assert hot.status == "warn" and group in hot.reason
    nvlink = one(verdict, "health.nvlink_active", 0)
    assert nvlink.status == "pass" and "the SKU is unknown, so compared with the GPU's own supported count" in nvlink.reason
    assert one(judgement.hosts["es1"], "health.gpu_count").status == "pass"   # the override still holds


def test_rule_matching_nothing_is_reported():
    document = copy.deepcopy(rules())
    document["rules"].append({"id": "health.typo", "probe": "health", "check": "field_equals", "severity": "warn",
                              "params": {"path": "gpus[].mig_mod.current", "expected": "disabled"}, "description": "a typo"})
    document["rules"].append({"id": "membw.plateau", "probe": "membw", "check": "plateau", "severity": "fail",
                              "params": {}, "description": "a probe that did not run"})
    verdict = judge_one(health_ok(), rule_document=document)
    unmatched = {check.id: check for check in verdict.judgement.unmatched_rules}
    # hostbw's default rules did not match either: the probe did not run in these recorded results
    # every default rule of a probe that did not run (these results hold health alone) matched nothing either
    # (the trend checks' rules read the run index, not a probe: they never match a result, and are not listed)
    not_run = {rule["id"] for rule in rules()["rules"] if rule["probe"] not in ("health", "history")}
    assert not_run and set(unmatched) == {"health.typo", "membw.plateau"} | not_run
    assert unmatched["health.typo"].status == "warn" and unmatched["health.typo"].host == ""
    assert "found no field to read" in unmatched["health.typo"].reason
    assert unmatched["membw.plateau"].status == "skip"
    assert "the membw probe gave no data on any host" in unmatched["membw.plateau"].reason
    assert verdict.verdict == "pass"


def test_override_turns_fail_into_warn_for_one_host():
    def thermal(number):
        envelope = _fleet_envelope(number)
        envelope["data"]["gpus"][0]["clock_event_reasons"]["names"] = ["hw_thermal_slowdown"]
        return envelope
    relaxed = dict(RIG_OVERRIDES)
    relaxed["health.clock_event_reasons"] = {"severity": "warn"}
    hosts = {"strict": _host(thermal(1)), "relaxed": _host(thermal(2), overrides=relaxed)}
    judgement = judge_fleet("run2", hosts, baselines(), rules())
    assert one(judgement.hosts["strict"], "health.clock_event_reasons", 0).status == "fail"
    check = one(judgement.hosts["relaxed"], "health.clock_event_reasons", 0)
    assert check.status == "warn" and "rule overridden for this host: severity" in check.threshold
    assert (judgement.hosts["strict"].verdict, judgement.hosts["relaxed"].verdict) == ("fail", "warn")


def test_override_of_unknown_rule_or_param_is_an_error():
    overrides = {"health.gpu_count": {"params": {"expected": 2, "expceted": 3}}, "health.nope": {"enabled": False}}
    verdict = judge_one(health_ok(), overrides=overrides)
    errors = [check.reason for check in verdict.checks if check.id == "rules.overrides"]
    assert any("override for unknown rule health.nope" in reason for reason in errors)
    assert any("override for health.gpu_count: unknown param expceted (the rule takes: expected)" in reason for reason in errors)
    assert verdict.verdict == "error"
    assert one(verdict, "health.gpu_count").status == "pass"     # the sound part still applies


def test_effective_rules_merges_and_keeps_defaults():
    merged, problems = effective_rules(rules(), {"health.xid_events": {"params": {"hardware_xids": [79]}, "severity": "warn"}})
    assert problems == []
    xid = [rule for rule in merged if rule["id"] == "health.xid_events"][0]
    assert xid["params"]["hardware_xids"] == [79] and xid["severity"] == "warn" and xid["overridden"] == ["severity", "params"]
    untouched, unused = effective_rules(rules(), None)
    assert [rule for rule in untouched if rule["id"] == "health.xid_events"][0]["params"]["hardware_xids"][0] == 48
    assert unused == []


def test_unreachable_host_never_passes():
    unreachable = {"reached": False, "reason": "ssh: connect to host gone port 22: No route to host", "groups": ["rack2"], "envelopes": {}}
    hosts = {"rig": _host(health_ok()), "gone": unreachable}
    judgement = judge_fleet("run2", hosts, baselines(), rules())
    gone = judgement.hosts["gone"]
    assert gone.verdict == "unreachable"
    assert [check.id for check in gone.checks] == ["host.reachable"]
    assert gone.reasons == ["host.reachable: not reached: ssh: connect to host gone port 22: No route to host"]
    assert gone.groups == ["rack2"]
    assert judgement.hosts["rig"].verdict == "pass"
    assert [verdict.host for verdict in judgement.hosts_worst_first()] == ["gone", "rig"]


def test_reached_host_without_results_is_an_error():
    judgement = judge_fleet("run2", {"empty": {"reached": True, "envelopes": {}}}, baselines(), rules())
    assert judgement.hosts["empty"].verdict == "error"
    assert judgement.to_dict()["hosts"]["empty"]["checks"][0]["id"] == "host.results"


def test_a_host_where_every_check_was_skipped_is_not_a_pass(tmp_path):
    """This machine's own health result (no NVIDIA driver here in CI): nothing is checked, so no pass."""
    import json
    import os
    import subprocess
    import sys
    from helpers import judge_fleet
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_baselines, load_rules

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = tmp_path / "health.json"
    subprocess.run([sys.executable, os.path.join(root, "probes", "health.py"), "--out", str(out)], check=True, timeout=300)
    envelope = json.loads(out.read_text())
    if envelope["status"] == "ok" or envelope["data"]["device_nodes"].get("gpu_node_count"):
        pytest.skip("this machine has NVIDIA GPUs or device nodes")
    baselines, unused_problems = load_baselines()
    hosts = {"cpu-only": {"envelopes": {"health": envelope}, "reached": True, "reason": "", "groups": [],
                          "rule_overrides": {}}}
    judgement = judge_fleet("r1", hosts, baselines, load_rules())
    verdict = judgement.hosts["cpu-only"]
    assert all(check.status == "skip" for check in verdict.checks if check.id != "host.gpu_measured")
    assert verdict.verdict == "warn"
    # The first reason is the true one: no GPU on this machine's PCI bus, not "install nvidia-ml-py" or "no driver".
    assert verdict.reasons[0].startswith("host.gpu_measured: no NVIDIA GPU on this ")
    assert "PCI bus" in verdict.reasons[0] and "nvidia-ml-py" not in verdict.reasons[0]
    assert all("no GPU expected" not in check.reason for check in verdict.checks)
    # and the acceptance gate refuses it although its verdict is only a warning
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import gate_lines
    assert gate_lines(judgement) and gate_lines(judgement)[0].startswith("cpu-only: warn - host.gpu_measured")


def test_a_host_whose_every_check_was_skipped_names_three_and_counts_the_rest():
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.check_helpers import make_check
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.verdict import host_verdict
    skips = [make_check({"id": "toy.rule_%d" % number, "probe": "toy", "severity": "fail"}, "rig", "skip",
                        "not enough peers") for number in range(9)]
    verdict = host_verdict("rig", skips, None, "", [])
    assert verdict.verdict == "warn"
    assert verdict.reasons[0].endswith("toy.rule_2: not enough peers; and 6 more)"), verdict.reasons[0]
