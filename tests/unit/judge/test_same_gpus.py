"""One machine is one host: hosts of a run that report the same GPUs (UUID or board serial) are flagged, and none of
them passes unless the inventory declares them aliases (an inventory group gpufleet_alias_<machine>)."""
from __future__ import annotations

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.identity_checks import CHECK_ID, gpu_identities
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.machine_facts import machine_facts
from helpers import GPU0, GPU1, RIG_OVERRIDES, as_machine, baselines, checks_of, health_ok, judge_fleet, one, rules


def _fleet(envelopes, groups=None):
    hosts = {name: {"envelopes": {"health": envelope}, "reached": True, "reason": "",
                    "groups": (groups or {}).get(name, ["rack1"]), "rule_overrides": RIG_OVERRIDES}
             for name, envelope in envelopes.items()}
    return judge_fleet("run1", hosts, baselines(), rules())


def test_three_hosts_with_the_same_gpus_are_flagged_and_none_of_them_passes():
    judgement = _fleet({"node1": health_ok(), "node1-alias": health_ok(), "node1-copy": health_ok(),
                        "node2": as_machine(health_ok(), 2)})
    for name in ("node1", "node1-alias", "node1-copy"):
        verdict = judgement.hosts[name]
        check = one(verdict, CHECK_ID)
        assert check.status == "fail" and verdict.verdict == "fail"
        assert check.reason.startswith("these hosts report the same GPUs: an inventory alias or a copied result: "
                                       "node1, node1-alias, node1-copy share ")
        assert "uuid %s" % GPU0 in check.reason and "uuid %s" % GPU1 in check.reason
        assert sorted(check.value + [name]) == ["node1", "node1-alias", "node1-copy"]
        assert verdict.reasons[0].startswith(CHECK_ID + ": these hosts report the same GPUs")
    assert checks_of(judgement.hosts["node2"], CHECK_ID) == []
    assert judgement.hosts["node2"].verdict in ("pass", "warn")


def test_one_shared_board_serial_is_enough():
    copied = as_machine(health_ok(), 2)
    copied["data"]["gpus"][1]["serial"] = health_ok()["data"]["gpus"][1]["serial"]
    judgement = _fleet({"node1": health_ok(), "node2": copied})
    check = one(judgement.hosts["node2"], CHECK_ID)
    assert check.status == "fail" and "share serial " in check.reason and "uuid" not in check.reason


def test_declared_aliases_pass_and_say_which_group_declares_them():
    groups = {"node1": ["rack1", "gpufleet_alias_node1"], "node1-ib": ["gpufleet_alias_node1"]}
    judgement = _fleet({"node1": health_ok(), "node1-ib": health_ok()}, groups)
    for name, other in (("node1", "node1-ib"), ("node1-ib", "node1")):
        check = one(judgement.hosts[name], CHECK_ID)
        assert check.status == "pass"
        assert check.reason.startswith("reports the same GPUs as %s (" % other)
        assert check.reason.endswith("declared aliases of one machine (inventory group gpufleet_alias_node1)")
        assert judgement.hosts[name].verdict in ("pass", "warn")


def test_a_declaration_that_leaves_out_one_of_the_hosts_declares_nothing():
    groups = {"a": ["gpufleet_alias_m"], "b": ["gpufleet_alias_m"], "c": ["rack1"]}
    judgement = _fleet({"a": health_ok(), "b": health_ok(), "c": health_ok()}, groups)
    assert [one(judgement.hosts[name], CHECK_ID).status for name in "abc"] == ["fail", "fail", "fail"]


def test_hosts_joined_through_different_gpus_are_one_set():
    """a shares GPU 0 with b, b shares GPU 1 with c: all three are named together."""
    a, b, c = health_ok(), health_ok(), as_machine(health_ok(), 3)
    a["data"]["gpus"][1].update(uuid="GPU-a1", serial="a1")
    c["data"]["gpus"][1].update(uuid=GPU1, serial=b["data"]["gpus"][1]["serial"])
    judgement = _fleet({"a": a, "b": b, "c": c})
    assert one(judgement.hosts["c"], CHECK_ID).reason.startswith("these hosts report the same GPUs: an inventory alias or a "
                                                                 "copied result: a, b, c share ")


def test_mig_gpus_vgpu_guests_serials_and_serials_that_identify_nothing_are_not_evidence():
    mig_a, mig_b = health_ok(), as_machine(health_ok(), 2)
    for envelope in (mig_a, mig_b):
        envelope["data"]["gpus"][0]["mig_mode"] = {"current": "enabled", "pending": "enabled"}
    mig_b["data"]["gpus"][0].update(uuid=GPU0, serial=mig_a["data"]["gpus"][0]["serial"])
    blank_a, blank_b = as_machine(health_ok(), 3), as_machine(health_ok(), 4)
    for envelope, serial in ((blank_a, "[N/A]"), (blank_b, "[N/A]")):
        for gpu in envelope["data"]["gpus"]:
            gpu["serial"] = serial
    blank_b["data"]["gpus"][0]["serial"] = "0"
    blank_b["data"]["gpus"][1]["serial"] = "[Not Supported]"
    blank_a["data"]["gpus"][1]["serial"] = "Not Available"
    vgpu_a, vgpu_b = as_machine(health_ok(), 5), as_machine(health_ok(), 6)
    for envelope in (vgpu_a, vgpu_b):
        for gpu in envelope["data"]["gpus"]:
            gpu.update(serial="1653724055774", virtualization_mode="vgpu")
    judgement = _fleet({"mig-a": mig_a, "mig-b": mig_b, "blank-a": blank_a, "blank-b": blank_b, "vgpu-a": vgpu_a, "vgpu-b": vgpu_b})
    for name in judgement.hosts:
        assert checks_of(judgement.hosts[name], CHECK_ID) == [], name


def test_identities_come_from_health_and_from_every_gpu_a_measurement_names():
    health = {"gpus": [{"index": 0, "uuid": "GPU-x", "serial": "1653724059881"}, {"index": 1, "error": "NVML lost it"},
                       {"index": 2, "uuid": "GPU-z", "serial": " N/A ", "mig_mode": {"current": "disabled", "pending": "disabled"}}]}
    assert gpu_identities(machine_facts(health), ["GPU-m", None, 7]) == {"uuid GPU-x", "serial 1653724059881", "uuid GPU-z",
                                                                         "uuid GPU-m"}
    assert gpu_identities(machine_facts({"gpus": {"unavailable": "no NVML"}})) == set()
    assert gpu_identities(None, ["GPU-m"]) == {"uuid GPU-m"}
    mig = {"gpus": [{"index": 0, "uuid": "GPU-p", "serial": "1653724059881", "mig_mode": {"current": "enabled"}}]}
    assert gpu_identities(machine_facts(mig), ["GPU-p", "GPU-q"]) == {"uuid GPU-q"}
