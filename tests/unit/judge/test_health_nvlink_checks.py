"""health.nvlink_errors and health.gpu_fabric on the recorded H200 results: since-boot counts, a counter rising between
two runs judged as DCGM's health watch judges it, the NVSwitch fabric registration, and the skips of a host without them."""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from machine_trees import machine_section  # noqa: E402

from helpers import baselines, health_ok, judge_fleet, judge_one, one, rules  # noqa: E402
from test_verdict_matrix import H200X1, run  # noqa: E402

COUNTERS = ("replay", "recovery", "crc_flit", "crc_data")
NOT_SUPPORTED = {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
EARLIER_RUN = "20261130T015347Z-000001"


def with_counters(envelope, counts=None, fabric=None):
    """Every GPU's 18 links with zero counts except counts {(gpu, link, counter): n}; fabric completed unless given."""
    for gpu in envelope["data"]["gpus"]:
        links = []
        for link in range(18):
            row = {"link": link, "state": "active", "ecc_data": NOT_SUPPORTED}
            row.update({name: (counts or {}).get((gpu["index"], link, name), 0) for name in COUNTERS})
            links.append(row)
        totals = {name: sum(row[name] for row in links) for name in COUNTERS}
        totals.update(ecc_data={"unavailable": "no link gave a ecc_data count"}, links_counted=18)
        gpu["nvlink_errors"] = {"links": links, "totals": totals}
        gpu["fabric"] = dict(fabric or {"state": "completed", "state_code": 3, "status": "success", "status_code": 0,
                                        "clique_id": 32766, "cluster_uuid": "00000000-0000-0000-0000-000000000000",
                                        "function": "nvmlDeviceGetGpuFabricInfoV", "health_mask": 0})
    return envelope


def earlier(counts=None, hours_before=1):
    envelope = with_counters(health_ok(), counts)
    envelope["run_id"] = EARLIER_RUN
    envelope["started"] = "2026-11-30T%02d:53:48+00:00" % (2 - hours_before)
    return {"rig": {"health": envelope}}


def test_clean_links_pass_and_say_they_were_not_compared_without_an_earlier_run():
    check = one(judge_one(with_counters(health_ok())), "health.nvlink_errors", 0)
    assert check.status == "pass"
    assert check.reason == ("GPU 0 (GPU-8eb0778b): no replay, recovery or CRC error on its 18 NVLinks since the driver loaded "
                            "(not compared with an earlier run: no earlier health result of this host)")
    assert check.value == 0 and check.reference == 0
    assert check.reference_source.startswith("NVIDIA DCGM health watch")


def test_clean_links_unchanged_since_the_previous_run_pass():
    check = one(judge_one(with_counters(health_ok()), previous=earlier()), "health.nvlink_errors", 1)
    assert check.status == "pass" and "not compared" not in check.reason


def test_a_constant_replay_count_since_boot_warns_with_words():
    counts = {(0, 5, "replay"): 3}
    check = one(judge_one(with_counters(health_ok(), counts), previous=earlier(counts)), "health.nvlink_errors", 0)
    assert check.status == "warn"
    assert check.reason == ("GPU 0 (GPU-8eb0778b): link 5: 3 replay errors since the driver loaded, unchanged since %s (60 min "
                            "earlier)" % EARLIER_RUN)
    alone = one(judge_one(with_counters(health_ok(), counts)), "health.nvlink_errors", 0)
    assert alone.status == "warn" and "no earlier count to tell whether they still rise" in alone.reason


def test_replay_errors_rising_between_two_runs_fail_naming_the_link():
    verdict = judge_one(with_counters(health_ok(), {(1, 11, "replay"): 7}), previous=earlier({(1, 11, "replay"): 3}))
    check = one(verdict, "health.nvlink_errors", 1)
    assert check.status == "fail"
    assert check.reason.startswith("GPU 1 (GPU-c2d869be): link 11: 7 replay errors since the driver loaded, 4 of them new "
                                   "since %s (60 min earlier)" % EARLIER_RUN)
    assert "reseat or RMA" in check.reason
    assert one(verdict, "health.nvlink_errors", 0).status == "pass"
    assert verdict.verdict == "fail"


def test_recovery_errors_rising_fail():
    check = one(judge_one(with_counters(health_ok(), {(0, 0, "recovery"): 1}), previous=earlier()), "health.nvlink_errors", 0)
    assert check.status == "fail" and "link 0: 1 recovery errors since the driver loaded, 1 of them new" in check.reason


def test_crc_errors_are_judged_as_a_rate_between_the_runs():
    # 3600 s apart: 3,600 new CRC flit errors is 1/s (warn), 720,000 is 200/s (fail at DCGM's 100/s)
    slow = one(judge_one(with_counters(health_ok(), {(0, 2, "crc_flit"): 3650}), previous=earlier({(0, 2, "crc_flit"): 50})),
               "health.nvlink_errors", 0)
    assert slow.status == "warn"
    assert "link 2: CRC flit errors rose by 3600 since %s (60 min earlier): 1/s, below 100/s" % EARLIER_RUN in slow.reason
    fast = one(judge_one(with_counters(health_ok(), {(0, 2, "crc_data"): 720000}), previous=earlier()), "health.nvlink_errors", 0)
    assert fast.status == "fail"
    assert "link 2: CRC data errors rose by 720000 since %s (60 min earlier): 200/s, at or above 100/s" % EARLIER_RUN in fast.reason


def test_counters_that_fell_are_a_reset_not_a_rise():
    check = one(judge_one(with_counters(health_ok()), previous=earlier({(0, 3, "replay"): 9})), "health.nvlink_errors", 0)
    assert check.status == "pass"
    assert "counters fell since %s (link 3 replay 9 -> 0): the driver reloaded or the GPU was reset" % EARLIER_RUN in check.reason


def test_a_gpu_without_nvlink_is_a_skip_with_the_reason():
    envelope = with_counters(health_ok())
    envelope["data"]["gpus"][0]["nvlink_errors"] = {
        "unavailable": "no NVLink error counters: NVML supports no NVLink on this GPU (not supported for any of the 36 link "
                       "indices asked: a PCIe card, or a VM slice whose NVLinks are not passed through)"}
    check = one(judge_one(envelope), "health.nvlink_errors", 0)
    assert check.status == "skip" and "NVML supports no NVLink on this GPU" in check.reason


def test_an_unreadable_counter_set_is_an_error_and_a_result_without_them_a_skip():
    envelope = with_counters(health_ok())
    envelope["data"]["gpus"][0]["nvlink_errors"] = {"unavailable": "this nvidia-ml-py lacks nvmlDeviceGetNvLinkErrorCounter"}
    assert one(judge_one(envelope), "health.nvlink_errors", 0).status == "error"
    old = one(judge_one(health_ok()), "health.nvlink_errors", 0)
    assert old.status == "skip" and "records no NVLink error counters" in old.reason
    assert one(judge_one(health_ok()), "health.gpu_fabric", 0).status == "skip"


def fabric_check(state, status="success", status_code=0, gpu=0, envelope=None):
    fabric = {"state": state, "function": "nvmlDeviceGetGpuFabricInfoV"}
    if state == "not_supported":
        fabric["reason"] = "NVML answers Not Supported to nvmlDeviceGetGpuFabricInfoV: this GPU reports no NVSwitch fabric"
    else:
        fabric.update(state_code=3, status=status, status_code=status_code, clique_id=32766,
                      cluster_uuid="00000000-0000-0000-0000-000000000000")
    return one(judge_one(with_counters(envelope or health_ok(), fabric=fabric)), "health.gpu_fabric", gpu)


def test_fabric_completed_with_success_passes():
    check = fabric_check("completed")
    assert check.status == "pass"
    assert check.reason == ("GPU 0 (GPU-8eb0778b): registered in the NVSwitch fabric (clique 32766, cluster "
                            "00000000-0000-0000-0000-000000000000)")
    assert check.value == "completed/success" and check.threshold == "state completed and status success"


def test_fabric_in_progress_warns_not_started_and_an_error_status_fail():
    progress = fabric_check("in_progress")
    assert progress.status == "warn" and "still registering this GPU" in progress.reason
    not_started = fabric_check("not_started")
    assert not_started.status == "fail"
    assert "has not started registering this GPU (state not started); this host has an NVSwitch fabric (NVML: GPU 0 link 0 " \
           "reaches an NVSwitch): is nvidia-fabricmanager installed" in not_started.reason
    failed = fabric_check("completed", status="timeout", status_code=10)
    assert failed.status == "fail" and "registering this GPU with the error timeout (NVML return 10)" in failed.reason


def test_fabric_not_supported_is_a_skip_never_a_fail():
    check = fabric_check("not_supported")
    assert check.status == "skip"
    assert "Not Supported to nvmlDeviceGetGpuFabricInfoV" in check.reason
    assert "but this GPU's NVML does not report its registration" in check.reason


def test_unreadable_fabric_info_is_a_skip_where_nothing_says_nvswitch_else_an_error():
    envelope = with_counters(health_ok())
    for gpu in envelope["data"]["gpus"]:
        gpu["fabric"] = {"unavailable": "the GPU fabric info could not be read: this nvidia-ml-py lacks nvmlDeviceGetGpuFabricInfoV"}
    assert one(judge_one(envelope), "health.gpu_fabric", 0).status == "error"
    for gpu in envelope["data"]["gpus"]:
        for link in gpu["nvlink"]["links"]:
            link["remote_device_type"] = "gpu"
    check = one(judge_one(envelope), "health.gpu_fabric", 0)
    assert check.status == "skip" and "nothing says this host has an NVSwitch fabric" in check.reason


def test_the_one_gpu_h200_vm_skips_both_with_the_reason(tmp_path):
    """The rig: a VM given one H200 of an HGX board, NVML Not Supported for every NVLink; whatever its fabric says."""
    envelopes = run(H200X1)
    data = envelopes["health"]["data"]
    gpu = data["gpus"][0]
    gpu["virtualization_mode"] = "pass_through"
    data["machine"] = machine_section(tmp_path, [("0000:00:06.0", "nvidia", 0)], {"0000:00:06.0": 0}, hypervisor=True)
    gpu["nvlink_errors"] = {"unavailable": "no NVLink error counters: NVML supports no NVLink on this GPU (not supported for "
                                           "any of the 36 link indices asked: a PCIe card, or a VM slice whose NVLinks are "
                                           "not passed through)"}
    for fabric in ({"state": "not_supported", "function": "nvmlDeviceGetGpuFabricInfoV", "reason": "NVML answers Not Supported"},
                   {"state": "not_started", "state_code": 1, "status": "success", "status_code": 0, "clique_id": 0,
                    "cluster_uuid": "00000000-0000-0000-0000-000000000000", "function": "nvmlDeviceGetGpuFabricInfoV"}):
        gpu["fabric"] = fabric
        hosts = {"host": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": {}}}
        verdict = judge_fleet("vm", hosts, baselines(), rules()).hosts["host"]
        assert verdict.verdict == "pass", verdict.reasons
        errors, fabric_check_ = one(verdict, "health.nvlink_errors"), one(verdict, "health.gpu_fabric")
        assert errors.status == "skip" and "NVML supports no NVLink on this GPU" in errors.reason
        assert fabric_check_.status == "skip"
        assert "in a virtual machine" in fabric_check_.reason and "takes no part in an NVSwitch fabric" in fabric_check_.reason


def test_the_earlier_run_is_read_by_gpu_uuid():
    """A GPU the earlier run did not have is judged on its since-boot counts alone, and says so."""
    previous = earlier({(0, 1, "replay"): 0})
    previous["rig"]["health"]["data"]["gpus"][0]["uuid"] = "GPU-00000000-0000-0000-0000-000000000000"
    check = one(judge_one(with_counters(health_ok(), {(0, 1, "replay"): 2}), previous=previous), "health.nvlink_errors", 0)
    assert check.status == "warn"
    assert "the earlier run %s has no GPU with this UUID" % EARLIER_RUN in check.reason


def test_fabric_not_started_where_nothing_says_nvswitch_warns_instead_of_failing():
    envelope = health_ok()
    for gpu in envelope["data"]["gpus"]:
        for link in gpu["nvlink"]["links"]:
            link["remote_device_type"] = "gpu"
    check = fabric_check("not_started", envelope=envelope)
    assert check.status == "warn" and "nothing says this host has an NVSwitch fabric" in check.reason


def test_a_registered_gpu_whose_fabric_health_reports_trouble_warns():
    envelope = with_counters(health_ok())
    envelope["data"]["gpus"][1]["fabric"]["health"] = {
        "degraded_bandwidth": "yes", "route_recovery_in_progress": "no", "route_unhealthy": "no",
        "access_timeout_recovery_in_progress": "not_supported", "incorrect_configuration": "insufficient_nvlinks",
        "partition_assigned": "yes", "gfm_state": "not_supported"}
    verdict = judge_one(envelope)
    check = one(verdict, "health.gpu_fabric", 1)
    assert check.status == "warn"
    assert check.reason.endswith("but its fabric health says its bandwidth is degraded; its configuration is incorrect "
                                 "(insufficient nvlinks): see the nvidia-fabricmanager log")
    assert one(verdict, "health.gpu_fabric", 0).status == "pass"


def test_a_rise_below_an_overridden_rise_min_warns_with_the_rise():
    overrides = {"health.nvlink_errors": {"params": {"rise_min": 5}}}
    overrides.update({"health.gpu_count": {"params": {"expected": 2}}})
    verdict = judge_one(with_counters(health_ok(), {(0, 7, "replay"): 4}), overrides=overrides, previous=earlier({(0, 7, "replay"): 2}))
    check = one(verdict, "health.nvlink_errors", 0)
    assert check.status == "warn"
    assert "link 7: 4 replay errors since the driver loaded, 2 of them new since %s (60 min earlier), below the rise of 5 that " \
           "counts" % EARLIER_RUN in check.reason
    assert "rule health.nvlink_errors param crc_rate_fail_per_s (inventory override)" in check.reference_source
