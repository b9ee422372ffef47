"""The tuning probe's results judged: ACS, link width and MaxPayload checks, the PCIe path behind a P2P pair, and the
settings compared with the previous run. Data from the probe itself, run over recorded-style sysfs trees
(tests/unit/probes/tuning_trees.py): an RTX PRO 6000 two-NUMA PCIe host, ACS redirect on the switch ports, a
downtrained link, an unprivileged read."""
import copy
import os
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.shared.pcie_path import path_between
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.settings import settings_drift
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.tuning.checks import TUNING_CHECKS
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import judging_of
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.tuning.view import tuning_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probes"))
import tuning_trees  # noqa: E402  pylint: disable=wrong-import-position

import tuning as tuning_probe  # noqa: E402  pylint: disable=wrong-import-position

import helpers  # noqa: E402  pylint: disable=wrong-import-position
import test_interconnect_checks as interconnect  # noqa: E402  pylint: disable=wrong-import-position

GPUS = tuning_trees.GPU_ADDRESSES
ENVELOPE = {"schema_version": "1", "probe": "tuning", "host": "rtx", "status": "ok", "started": "2026-12-01T18:00:00+00:00",
            "duration_s": 0.2, "command": [], "environment": {}, "reason": ""}


def measured(builder, tmp_path, privileged=True):
    result = tuning_probe.collect({}, builder(tmp_path, privileged=privileged), privileged=privileged)
    envelope = dict(ENVELOPE, status=result.status, data=result.data, reason=result.reason)
    assert envelope_problems(envelope) == []
    return result.data


def judged(check, data):
    rule = {"id": "tuning.%s" % check, "probe": "tuning", "check": check, "params": {}}
    return TUNING_CHECKS[check]("rtx", data, rule, None)


def test_the_incident_host_passes_every_tuning_check(tmp_path):
    data = measured(tuning_trees.rtx_pro_6000_two_numa, tmp_path)
    [acs] = judged("acs_redirect", data)
    assert acs.status == "pass" and acs.reason == "no ACS redirect on the 16 bridges on the GPUs' paths"
    [width] = judged("link_width", data)
    assert width.status == "pass" and "(8 GPU(s), 24 device(s))" in width.reason
    payloads = judged("max_payload_consistent", data)
    assert [check.status for check in payloads] == ["pass"] * 8
    assert payloads[0].reason == ("GPU %s: MaxPayload 256 B on all 4 devices of its path (P2P copies are posted writes of "
                                  "at most this size)" % GPUS[0])


def test_acs_redirect_on_the_switch_ports_warns_naming_each_port(tmp_path):
    [check] = judged("acs_redirect", measured(tuning_trees.acs_on_switch_port, tmp_path))
    assert check.status == "warn" and check.value == 8
    assert "bridge 0000:12:00.0 (RR+CR)" in check.reason and "disable_acs_redir" in check.reason


def test_a_downtrained_link_warns_and_an_idle_speed_does_not(tmp_path):
    [check] = judged("link_width", measured(tuning_trees.downtrained_link, tmp_path))
    assert check.status == "warn" and check.value == 1
    assert check.reason.startswith("GPU %s link trained at x8 of x16" % tuning_trees.DOWNTRAINED_GPU)


def test_without_root_the_config_space_checks_skip_with_the_opt_in_and_the_link_is_still_judged(tmp_path):
    data = measured(tuning_trees.rtx_pro_6000_two_numa, tmp_path, privileged=False)
    [acs] = judged("acs_redirect", data)
    assert acs.status == "skip" and "gpufleet_become_probes: [tuning]" in acs.reason
    [payload] = judged("max_payload_consistent", data)
    assert payload.status == "skip" and "become" in payload.reason
    [width] = judged("link_width", data)
    assert width.status == "pass"


def test_a_host_without_gpu_skips_every_tuning_check(tmp_path):
    data = tuning_probe.collect({}, tuning_trees.cpu_machine(tmp_path), privileged=True).data
    assert [check.status for name in TUNING_CHECKS for check in judged(name, data)] == ["skip"] * 3


def test_the_path_between_two_gpus_behind_one_switch_and_across_numa(tmp_path):
    data = measured(tuning_trees.rtx_pro_6000_two_numa, tmp_path)
    near = path_between(data, GPUS[0], GPUS[1], same_numa=True)
    assert [device["address"] for device in near.devices] == [GPUS[0], "0000:12:00.0", "0000:11:00.0", "0000:12:01.0", GPUS[1]]
    assert near.causes == []
    assert near.summary == ("MaxPayload 256 B; MaxReadReq 512/4096 B (bounds reads, not P2P's posted writes); "
                            "ACS redirect on 0 of 3 bridges; 4 hop(s) via bridge 0000:11:00.0")
    far = path_between(data, GPUS[0], GPUS[7], same_numa=False)
    assert far.causes == ["the pair crosses NUMA nodes, so its traffic crosses the inter-socket link"]
    assert far.summary.endswith("via the host bridge")


def test_the_likely_causes_of_a_slow_pcie_pair(tmp_path):
    redirected = path_between(measured(tuning_trees.acs_on_switch_port, tmp_path / "acs"), GPUS[0], GPUS[1], True)
    assert redirected.causes == ["ACS redirects peer traffic at bridge 0000:12:00.0, bridge 0000:12:01.0, so each P2P request "
                                 "goes up to the root complex and back"]
    narrow = path_between(measured(tuning_trees.downtrained_link, tmp_path / "narrow"), GPUS[4], GPUS[5], True)
    assert narrow.causes == ["GPU %s link trained at x8 of x16" % GPUS[5]]


def test_raising_max_read_request_is_a_warned_change_per_device_and_leaves_max_payload_unchanged(tmp_path):
    before = measured(tuning_trees.rtx_pro_6000_two_numa, tmp_path)
    after = copy.deepcopy(before)
    for device in after["pci_devices"]:
        device["max_read_request_bytes"] = 4096
    settings = judging_of("tuning").settings
    checks = {check.id: check for check in settings_drift("rtx", "tuning", settings(after), settings(before), "r1")}
    read_request = checks["drift.tuning.pcie_max_read_request_bytes"]
    assert read_request.status == "warn" and read_request.value == 12
    assert "bridge 0000:12:00.0: 512 B -> 4096 B" in read_request.reason
    assert checks["drift.tuning.pcie_max_payload_bytes"].status == "pass"
    assert checks["drift.tuning.vm_swappiness"].reason == "vm.swappiness 10, unchanged since run r1"
    assert all(check.status == "pass" for name, check in checks.items() if name != "drift.tuning.pcie_max_read_request_bytes")


def test_every_setting_of_the_incident_is_compared(tmp_path):
    ids = {setting.setting_id for setting in judging_of("tuning").settings(measured(tuning_trees.rtx_pro_6000_two_numa, tmp_path))}
    for wanted in ("tuning.pcie_max_payload_bytes", "tuning.pcie_max_read_request_bytes", "tuning.pcie_acs_control",
                   "tuning.numa_balancing", "tuning.cmdline_settings", "tuning.nmi_watchdog", "tuning.sched_autogroup_enabled",
                   "tuning.vm_swappiness", "tuning.vm_dirty_ratio", "tuning.net_core_rmem_max_bytes", "tuning.cpufreq_drivers",
                   "tuning.amd_pstate_status", "tuning.cpuidle_state_disabled"):
        assert wanted in ids, wanted


@pytest.mark.parametrize("privileged", [True, False])
def test_the_dossier_lists_every_device_and_setting(tmp_path, privileged):
    view = tuning_view(measured(tuning_trees.acs_on_switch_port, tmp_path, privileged=privileged))
    devices, kernel = view["tables"]
    assert len(devices["rows"]) == 24 and len(kernel["rows"]) > 10
    port = next(row for row in devices["rows"] if row[0].text == "0000:12:00.0")
    if privileged:
        assert (port[9].text, port[9].flag) == ("SV RR CR UF", "warn") and port[5].text == "256 B"
    else:
        assert port[9].text == "n/a" and "become" in port[9].note and "root" in view["note"]


def pcie_host(tmp_path, builder, slow_pair_gbps):
    """An RTX PRO 6000-like host as the judge sees it: health (the recorded result, its GPUs given the tree's bus ids),
    p2p with GPUs 4 -> 5 and 5 -> 4 (one switch) at slow_pair_gbps and 6 -> 7, 7 -> 6 at 50 GB/s, and tuning."""
    health = helpers.health_ok()
    template = health["data"]["gpus"][0]
    gpus = []
    for index, address in enumerate(GPUS):
        entry = copy.deepcopy(template)
        entry.update(index=index, uuid=interconnect.uuid_of(index))
        entry["pci"]["bus_id"] = address.upper()
        gpus.append(entry)
    health["data"]["gpus"] = gpus
    pairs = [interconnect.pair(src, dst, rate, link="PXB", kind="pcie") for src, dst, rate in (
        (4, 5, slow_pair_gbps), (5, 4, slow_pair_gbps), (6, 7, 50.0), (7, 6, 50.0))]
    tuning = dict(ENVELOPE, data=measured(builder, tmp_path), host="rig")
    return {"health": health, "p2p": interconnect.p2p(pairs, gpus=8), "tuning": tuning}


def judge_pcie_host(envelopes):
    hosts = {"rig": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [],
                     "rule_overrides": {"health.gpu_count": {"params": {"expected": 8}}}}}
    return helpers.judge_fleet("run1", hosts, helpers.baselines(), helpers.rules()).hosts["rig"]


def pair_checks(verdict, src, dst):
    return [check for check in verdict.checks if check.probe == "p2p" and check.reason.startswith("GPU %d → GPU %d (" % (src, dst))]


def test_a_slow_pcie_pair_names_the_downtrained_link_on_its_path(tmp_path):
    verdict = judge_pcie_host(pcie_host(tmp_path, tuning_trees.downtrained_link, 25.0))
    [outlier] = [check for check in pair_checks(verdict, 4, 5) if check.id == "p2p.pair_outlier"]
    assert outlier.status == "fail"
    assert "likely cause: GPU %s link trained at x8 of x16 (MaxPayload 256 B; " % GPUS[5] in outlier.reason
    [healthy] = [check for check in pair_checks(verdict, 6, 7) if check.id == "p2p.pair_outlier"]
    assert healthy.status == "pass" and "; path: MaxPayload 256 B; MaxReadReq 512/4096 B (bounds reads, not P2P's posted " \
        "writes); ACS redirect on 0 of 3 bridges; 4 hop(s) via bridge 0000:b1:00.0" in healthy.reason


def test_a_slow_pcie_pair_with_nothing_on_its_path_says_so(tmp_path):
    verdict = judge_pcie_host(pcie_host(tmp_path, tuning_trees.rtx_pro_6000_two_numa, 25.0))
    [outlier] = [check for check in pair_checks(verdict, 4, 5) if check.id == "p2p.pair_outlier"]
    assert outlier.status == "fail" and "nothing the tuning probe recorded on the path explains it" in outlier.reason


def test_without_a_tuning_result_the_pair_checks_are_as_they_were(tmp_path):
    envelopes = pcie_host(tmp_path, tuning_trees.rtx_pro_6000_two_numa, 25.0)
    del envelopes["tuning"]
    verdict = judge_pcie_host(envelopes)
    assert all("path:" not in check.reason and "likely cause" not in check.reason for check in verdict.checks)
