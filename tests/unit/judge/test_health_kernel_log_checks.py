"""The judge on the kernel log beyond XID (health.kernel_log_events) and the PCIe AER counters (health.pcie_aer_counters),
on the recorded H200 health result with events in the host's format added."""
from __future__ import annotations

from helpers import checks_of, health_ok, judge_one, one, rules
from probe_packages.health.kernel_log import summarize
from probe_packages.health.kernel_log_classify import classify_lines

GPU1_ADDRESS = "0000:00:07.0"


def with_lines(lines, xid_events=None, events_not_recorded=None):
    envelope = health_ok()
    log = envelope["data"]["kernel_log"]
    classified = classify_lines(lines)
    log.update(events=classified["events"], counts=classified["counts"],
               events_not_recorded=events_not_recorded or classified["events_not_recorded"])
    if xid_events is not None:
        log["xid_events"] = xid_events
    envelope["data"]["pcie_aer"] = {"devices": [], "devices_with_aer": 3, "listed_because": "test"}
    return envelope


def by_reason(verdict, words):
    found = [check for check in checks_of(verdict, "health.kernel_log_events") if words in check.reason]
    assert len(found) == 1, [check.reason for check in checks_of(verdict, "health.kernel_log_events")]
    return found[0]


def test_lines_beyond_xid_fail_the_node_end_to_end():
    """Before issue 34 this log (no XID line at all) judged pass: the NVSentinel #155 trap."""
    lines = ["[5.0] NVRM: GPU 0000:00:07.0: GPU has fallen off the bus.",
             "pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: 0000:00:07.0",
             "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 20034, Fatal, Link 30 LTSSM Fault Up"]
    envelope = health_ok()
    envelope["data"]["kernel_log"] = summarize("/dev/kmsg", lines, [], ["0000:00:06.0", "0000:00:07.0"])
    verdict = judge_one(envelope)
    assert verdict.verdict == "fail"
    failing = sorted(check.reason.split(" in the kernel log")[0] for check in checks_of(verdict, "health.kernel_log_events")
                     if check.status == "fail")
    assert failing == ["GPU fallen off the bus", "NVSwitch SXID", "PCIe uncorrectable (non-fatal) error"]


def test_a_clean_log_passes():
    check = one(judge_one(with_lines(["[1.0] Linux version 6.8.0", "[2.0] usb 1-1: new device"])), "health.kernel_log_events")
    assert check.status == "pass" and "no SXID, fallen-off-the-bus, PCIe AER" in check.reason


def test_fallen_off_the_bus_without_an_xid_fails_and_says_so():
    verdict = judge_one(with_lines(["[5.0] NVRM: GPU %s: GPU has fallen off the bus." % GPU1_ADDRESS]))
    check = one(verdict, "health.kernel_log_events")
    assert check.status == "fail" and check.gpu_index == 1 and check.action == "reseat_rma" and check.value == [GPU1_ADDRESS]
    assert "GPU fallen off the bus" in check.reason and "%s (GPU 1) x1" % GPU1_ADDRESS in check.reason
    assert "no XID 79 logged for %s" % GPU1_ADDRESS in check.reason
    assert verdict.verdict == "fail"


def test_fallen_off_the_bus_with_its_xid_says_the_xid_was_logged_too():
    xid = {"xid": 79, "pci_bus_id": GPU1_ADDRESS, "pid": None, "process_name": None, "hardware": True, "time": None,
           "gpu_index": 1, "message": "GPU has fallen off the bus."}
    check = one(judge_one(with_lines(["NVRM: GPU %s: GPU has fallen off the bus." % GPU1_ADDRESS], [xid])), "health.kernel_log_events")
    assert check.status == "fail" and "(XID 79 was logged for it too)" in check.reason


def test_sxid_follows_its_printed_severity():
    fatal = "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 20034, Fatal, Link 30 LTSSM Fault Up"
    non_fatal = "nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)"
    assert one(judge_one(with_lines([non_fatal])), "health.kernel_log_events").status == "warn"
    check = one(judge_one(with_lines([non_fatal, fatal])), "health.kernel_log_events")
    assert check.status == "fail" and "0000:c3:00.0 x1" in check.reason and "0000:c1:00.0 x1" in check.reason


def test_aer_uncorrected_fails_and_corrected_warns_only_above_the_threshold():
    notice = "pcieport 0000:00:01.0: AER: Corrected error received: 0000:0c:00.0"
    few = judge_one(with_lines([notice] * 8))
    check = one(few, "health.kernel_log_events")
    assert check.status == "pass" and "PCIe corrected error" in check.reason and "0000:0c:00.0 x8" in check.reason
    many = one(judge_one(with_lines([notice] * 9)), "health.kernel_log_events")
    assert many.status == "warn" and "<= 8 per device" in many.threshold
    uncorrected = judge_one(with_lines(["pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: 0000:21:00.0"]))
    assert one(uncorrected, "health.kernel_log_events").status == "fail"


def test_link_flaps_above_the_threshold_warn_and_benign_bridge_lines_never_fail():
    flaps = ["mlx5_core 0000:0c:00.0 ens1np0: Link down", "mlx5_core 0000:0c:00.0 ens1np0: Link up"] * 3
    bridge = ["br0: port 1(veth1a2b) entered disabled state", "br0: port 1(veth1a2b) entered forwarding state"] * 20
    verdict = judge_one(with_lines(flaps + bridge))
    link = by_reason(verdict, "NIC link down")
    assert link.status == "warn" and "ens1np0 x3" in link.reason and "veth1a2b" not in link.reason
    benign = by_reason(verdict, "benign kernel-log lines")
    assert benign.status == "pass" and benign.value == 40 and "veth1a2b" in benign.reason
    two = judge_one(with_lines(flaps[:4]))
    assert by_reason(two, "NIC link down").status == "pass"


def test_a_users_benign_pattern_extends_the_built_in_list_without_a_rerun():
    lines = ["mlx5_core 0000:0c:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x8 link at "
             "0000:00:01.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)",
             "br0: port 1(veth9) entered disabled state"]
    before = judge_one(with_lines(lines))
    assert by_reason(before, "ConnectX PCIe link limited").status == "warn"
    overrides = {"health.gpu_count": {"params": {"expected": 2}},
                 "health.kernel_log_events": {"params": {"extra_benign_patterns": [r"mlx5_core 0000:0c:00\.0: .*limited by"]}}}
    after = judge_one(with_lines(lines), overrides=overrides)
    checks = checks_of(after, "health.kernel_log_events")
    assert [check.status for check in checks] == ["pass"]
    assert "mlx5_pcie_limited 0000:0c:00.0 x1" in checks[0].reason and "nic_link_down veth9 x1" in checks[0].reason


def test_a_benign_pattern_that_does_not_compile_is_an_error_not_a_pass():
    overrides = {"health.gpu_count": {"params": {"expected": 2}},
                 "health.kernel_log_events": {"params": {"extra_benign_patterns": ["(unclosed"]}}}
    check = one(judge_one(with_lines(["br0: port 1(veth9) entered disabled state"]), overrides=overrides), "health.kernel_log_events")
    assert check.status == "error" and "'(unclosed' does not compile" in check.reason


def test_lines_counted_but_not_recorded_are_said():
    lines = ["mlx5_core 0000:0c:00.0 ens1np0: Link down"] * 3
    check = one(judge_one(with_lines(lines, events_not_recorded={"nic_link_down": 250})), "health.kernel_log_events")
    assert "250 more line(s) of this kind were counted but not recorded" in check.reason


def test_old_results_and_unreadable_logs_skip():
    old = one(judge_one(health_ok()), "health.kernel_log_events")
    assert old.status == "skip" and "predates" in old.reason
    assert one(judge_one(health_ok()), "health.pcie_aer_counters").status == "skip"
    envelope = with_lines([])
    envelope["data"]["kernel_log"] = {"unavailable": "no kernel log is readable here (dmesg_restrict=1): /dev/kmsg: EPERM"}
    check = one(judge_one(envelope), "health.kernel_log_events")
    assert check.status == "skip" and "dmesg_restrict=1" in check.reason


def _aer_device(address, role, correctable=0, nonfatal=0, fatal=0, below=None):
    def part(total, name):
        return {"total": total, "counters": {name: total} if total else {}}
    return {"pci_address": address, "role": role, "below": below, "correctable": part(correctable, "RxErr"),
            "nonfatal": part(nonfatal, "CmpltTO"), "fatal": part(fatal, "DLP")}


def test_aer_counters_fail_uncorrectable_on_the_training_path_and_warn_elsewhere():
    envelope = with_lines([])
    envelope["data"]["pcie_aer"]["devices"] = [
        _aer_device(GPU1_ADDRESS, "gpu", nonfatal=1), _aer_device("0000:00:01.0", "bridge", correctable=9, below="gpu"),
        _aer_device("0000:00:17.0", "other", fatal=1), _aer_device("0000:0c:00.0", "nic", correctable=8)]
    verdict = judge_one(envelope)
    checks = {check.reason.split(" ", 1)[0]: check for check in checks_of(verdict, "health.pcie_aer_counters")}
    assert sorted(checks) == ["0000:00:01.0", "0000:00:07.0", "0000:00:17.0"]
    gpu = checks[GPU1_ADDRESS]
    assert (gpu.status, gpu.gpu_index, gpu.value) == ("fail", 1, 1) and "1 uncorrectable PCIe error(s) since boot" in gpu.reason
    assert "[nonfatal: CmpltTO 1" in gpu.reason
    assert checks["0000:00:01.0"].status == "warn" and "above a gpu" in checks["0000:00:01.0"].reason
    assert checks["0000:00:17.0"].status == "warn"


def test_aer_counters_all_clean_pass_and_a_vm_skips():
    envelope = with_lines([])
    envelope["data"]["pcie_aer"]["devices"] = [_aer_device(GPU1_ADDRESS, "gpu", correctable=3)]
    assert one(judge_one(envelope), "health.pcie_aer_counters").status == "pass"
    envelope["data"]["pcie_aer"] = {"unavailable": "no PCI device here has AER statistics (aer_dev_correctable)"}
    assert one(judge_one(envelope), "health.pcie_aer_counters").status == "skip"


def test_the_rules_thresholds_carry_their_source():
    text = open(__file__.rsplit("/tests/", 1)[0] + "/plugins/plugin_utils/probes/health/rules.yaml", encoding="utf-8").read()
    for name in ("aer_corrected_warn_above: 8", "link_downs_warn_above: 2", "corrected_warn_above: 8"):
        line = [line for line in text.splitlines() if line.strip().startswith(name)][0]
        assert "# source: " in line
    ids = {rule["id"] for rule in rules()["rules"]}
    assert {"health.kernel_log_events", "health.pcie_aer_counters"} <= ids


def test_both_kernel_log_checks_skip_an_unread_log_with_their_words_and_say_nothing_of_an_absent_one():
    unread = health_ok()
    unread["data"]["kernel_log"] = {"unavailable": "dmesg: read kernel buffer failed: Operation not permitted"}
    verdict = judge_one(unread)
    for check_id, words in (("health.xid_events", "XID events not checked"), ("health.kernel_log_events", "kernel log not checked beyond XID")):
        check = one(verdict, check_id)
        assert (check.status, check.reason) == ("skip", "%s: dmesg: read kernel buffer failed: Operation not permitted" % words)
    absent = health_ok()
    del absent["data"]["kernel_log"]
    verdict = judge_one(absent)
    assert checks_of(verdict, "health.xid_events") == [] and checks_of(verdict, "health.kernel_log_events") == []
