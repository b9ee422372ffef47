"""The judge on recorded H200 health results and variants derived from them, one failure kind at a time."""
from __future__ import annotations

from helpers import GPU0, GPU1, RIG_OVERRIDES, RUN_OK, checks_of, health_ok, health_unavailable, judge_one, one, rules


def test_real_h200_all_pass():
    verdict = judge_one(health_ok())
    assert verdict.verdict == "pass", verdict.reasons
    assert verdict.reasons == []
    assert verdict.sku == "h200-sxm"
    assert "matched by name and PCI device id and memory" in verdict.sku_reason
    statuses = {check.status for check in verdict.checks}
    assert statuses <= {"pass", "skip"}
    count = one(verdict, "health.gpu_count")
    assert (count.status, count.value, count.reference) == ("pass", 2, 2)
    assert "inventory override" in count.reference_source
    nvlink = one(verdict, "health.nvlink_active", 1)
    assert (nvlink.status, nvlink.value, nvlink.reference, nvlink.gpu_uuid) == ("pass", 18, 18, GPU1)
    assert nvlink.reference_source == "baselines/h200-sxm.yaml nvlink_links"
    # Hopper remaps rows: retired pages are "Not Supported", a skip with NVML's reason
    retired = one(verdict, "health.retired_pages", 0)
    assert retired.status == "skip" and "NVML: Not Supported" in retired.reason
    assert one(verdict, "health.cuda_init").value == 6.58
    # only rules of probes that did not run (these results hold health alone) matched nothing, each said so
    probes_not_run = {rule["probe"] for rule in rules()["rules"] if rule["probe"] != "health"}
    assert {check.id.split(".")[0] for check in verdict.judgement.unmatched_rules} <= probes_not_run
    assert all(check.status == "skip" and "gave no data on any host" in check.reason for check in verdict.judgement.unmatched_rules)


def test_without_override_the_baseline_expects_eight_gpus():
    check = one(judge_one(health_ok(), overrides={}), "health.gpu_count")
    assert (check.status, check.value, check.reference) == ("fail", 2, 8)
    # a result written before the probe recorded the PCI bus: the SKU's board, and the hint for a slice
    assert check.reference_source == "baselines/h200-sxm.yaml gpus_per_node (this result does not record the PCI bus)"
    assert "set params.expected: 2 for health.gpu_count" in check.reason


def test_gpu_count_one_of_two():
    envelope = health_ok()
    del envelope["data"]["gpus"][1]
    verdict = judge_one(envelope)
    check = one(verdict, "health.gpu_count")
    assert (check.status, check.value, check.reference) == ("fail", 1, 2)
    assert "1 of 2 expected GPUs visible to NVML" in check.reason
    assert verdict.verdict == "fail"
    assert verdict.reasons[0].startswith("health.gpu_count: 1 of 2 expected GPUs")
    # /dev/nvidiaN still has 2 nodes; the probe's own comparison said they match (recorded), so it stays pass here


def test_ecc_uncorrectable():
    envelope = health_ok()
    envelope["data"]["gpus"][0]["ecc"]["volatile_uncorrected_count"] = 3
    verdict = judge_one(envelope)
    check = one(verdict, "health.ecc_volatile_uncorrected", 0)
    assert (check.status, check.value, check.reference, check.threshold) == ("fail", 3, 0, "<= 0")
    assert check.gpu_uuid == GPU0
    assert "3 volatile uncorrectable ECC errors" in check.reason
    assert one(verdict, "health.ecc_volatile_uncorrected", 1).status == "pass"
    assert verdict.verdict == "fail"


def test_ecc_disabled():
    envelope = health_ok()
    envelope["data"]["gpus"][1]["ecc"]["mode_current"] = "disabled"
    check = one(judge_one(envelope), "health.ecc_enabled", 1)
    assert check.status == "fail" and "ECC is disabled" in check.reason


def test_remapped_rows_pending_and_uncorrectable():
    envelope = health_ok()
    envelope["data"]["gpus"][1]["remapped_rows"]["pending"] = True
    envelope["data"]["gpus"][0]["remapped_rows"]["uncorrectable_count"] = 512
    verdict = judge_one(envelope)
    pending = one(verdict, "health.remapped_rows", 1)
    assert pending.status == "fail" and "a row remapping is pending: reset the GPU" in pending.reason
    many = one(verdict, "health.remapped_rows", 0)
    assert (many.status, many.value) == ("fail", 512)
    assert "512 rows remapped for uncorrectable errors" in many.reason


def test_retired_pages_limits():
    envelope = health_ok()
    envelope["data"]["gpus"][0]["retired_pages"] = {"single_bit_ecc_count": 10, "double_bit_ecc_count": 6, "pending": False}
    envelope["data"]["gpus"][1]["retired_pages"] = {"single_bit_ecc_count": 60, "double_bit_ecc_count": 3, "pending": False}
    verdict = judge_one(envelope)
    assert (one(verdict, "health.retired_pages", 0).status, one(verdict, "health.retired_pages", 0).value) == ("warn", 16)
    assert (one(verdict, "health.retired_pages", 1).status, one(verdict, "health.retired_pages", 1).value) == ("fail", 63)


def test_pcie_width_x8_fails_and_idle_gen_warns():
    envelope = health_ok()
    envelope["data"]["gpus"][1]["pcie"]["current_link_width"] = 8
    envelope["data"]["gpus"][0]["pcie"]["current_link_gen"] = 1
    verdict = judge_one(envelope)
    width = one(verdict, "health.pcie_link_width", 1)
    assert (width.status, width.value, width.reference) == ("fail", 8, 16)
    assert "PCIe link x8 of x16" in width.reason
    gen = one(verdict, "health.pcie_link_gen", 0)
    assert (gen.status, gen.value, gen.reference) == ("warn", 1, 5)
    assert "idle GPUs lower the PCIe link speed" in gen.reason
    assert verdict.verdict == "fail"


def test_sixteen_of_eighteen_nvlinks():
    envelope = health_ok()
    nvlink = envelope["data"]["gpus"][0]["nvlink"]
    nvlink["links"][4]["state"] = "inactive"
    nvlink["links"][11]["state"] = "inactive"
    nvlink["active_count"] = 16
    check = one(judge_one(envelope), "health.nvlink_active", 0)
    assert (check.status, check.value, check.reference) == ("fail", 16, 18)
    assert "16 of 18 NVLinks active (inactive: 4, 11)" in check.reason


def test_hw_thermal_throttle_fails_sync_boost_warns():
    envelope = health_ok()
    envelope["data"]["gpus"][0]["clock_event_reasons"].update(
        {"mask": 0x41, "mask_hex": "0x0000000000000041", "names": ["gpu_idle", "hw_thermal_slowdown"], "slowdown_active": True})
    envelope["data"]["gpus"][1]["clock_event_reasons"].update({"mask": 0x11, "names": ["gpu_idle", "sync_boost"]})
    verdict = judge_one(envelope)
    thermal = one(verdict, "health.clock_event_reasons", 0)
    assert thermal.status == "fail" and "clocks held down by hw_thermal_slowdown" in thermal.reason
    assert one(verdict, "health.clock_event_reasons", 1).status == "warn"


def test_hardware_xid_79_fails_software_xid_warns():
    envelope = health_ok()
    log = envelope["data"]["kernel_log"]
    log["xid_events"] = [
        {"xid": 79, "pci_bus_id": "0000:00:07.0", "pid": None, "process_name": None, "hardware": True, "time": None,
         "gpu_index": 1, "message": "GPU has fallen off the bus."},
        {"xid": 13, "pci_bus_id": "0000:00:06.0", "pid": 77, "process_name": "python3", "hardware": False, "time": None,
         "gpu_index": 0, "message": "Graphics Exception"},
    ]
    log["xid_counts"], log["hardware_xid_count"] = {"13": 1, "79": 1}, 1
    verdict = judge_one(envelope)
    hardware = one(verdict, "health.xid_events", 1)
    assert (hardware.status, hardware.value) == ("fail", [79])
    assert "XID 79 x1 (hardware: GPU has fallen off the bus)" in hardware.reason
    software = one(verdict, "health.xid_events", 0)
    assert software.status == "warn" and "XID 13 x1 (software or application" in software.reason


def test_unreadable_kernel_log_is_a_skip_with_reason():
    envelope = health_ok()
    envelope["data"]["kernel_log"] = {"unavailable": "no kernel log is readable here (dmesg_restrict=1): /dev/kmsg: EPERM"}
    check = one(judge_one(envelope), "health.xid_events")
    assert check.status == "skip" and "dmesg_restrict=1" in check.reason


def test_device_major_mismatch_uses_the_probes_sentence():
    envelope = health_ok()
    sentence = ("/dev/nvidia-uvm has major 504 (no driver in /proc/devices) but nvidia-uvm now has major 238: the node is stale "
                "(made before a kernel or driver change); recreate it and update any container device rules that allow the old major")
    envelope["data"]["device_nodes"]["mismatches"] = [{"path": "/dev/nvidia-uvm", "sentence": sentence}]
    verdict = judge_one(envelope)
    check = one(verdict, "health.device_majors")
    assert check.status == "fail" and check.reason == sentence and check.value == ["/dev/nvidia-uvm"]
    assert verdict.verdict == "fail"


def test_cuda_init_failed():
    envelope = health_ok()
    init = envelope["data"]["cuda_init"]
    init.update({"ok": False, "stage": "init", "reason": "torch.cuda.init() failed: CUDA driver initialization failed",
                 "error": {"type": "RuntimeError", "message": "CUDA driver initialization failed, you might not have a CUDA gpu."}})
    check = one(judge_one(envelope), "health.cuda_init")
    assert check.status == "fail"
    assert "CUDA init failed at stage init: torch.cuda.init() failed" in check.reason
    assert "RuntimeError: CUDA driver initialization failed, you might not have a CUDA gpu." in check.reason


def test_cuda_init_unavailable_is_could_not_tell():
    envelope = health_ok()
    envelope["data"]["cuda_init"] = {"unavailable": "torch is not importable by /usr/bin/python3"}
    check = one(judge_one(envelope), "health.cuda_init")
    assert check.status == "error"
    assert check.reason == "could not tell whether CUDA initialises: torch is not importable by /usr/bin/python3"


def test_unexpected_process_warns_allowed_one_passes():
    envelope = health_ok()
    envelope["data"]["gpus"][0]["processes"]["compute"] = [{"pid": 4242, "name": "/usr/bin/python3", "used_memory_mib": 1200}]
    envelope["data"]["gpus"][1]["processes"]["compute"] = [{"pid": 99, "name": "dcgm-exporter", "used_memory_mib": 10}]
    overrides = dict(RIG_OVERRIDES)
    overrides["health.gpu_processes"] = {"params": {"allowed_process_names": ["dcgm-exporter"]}}
    verdict = judge_one(envelope, overrides=overrides)
    check = one(verdict, "health.gpu_processes", 0)
    assert check.status == "warn" and "/usr/bin/python3 (pid 4242, 1.17 GiB)" in check.reason  # pid, name, memory (issue 44)
    assert one(verdict, "health.gpu_processes", 1).status == "pass"
    assert verdict.verdict == "warn"


def test_unavailable_field_skip_or_error():
    envelope = health_ok()
    envelope["data"]["gpus"][0]["persistence_mode"] = {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
    envelope["data"]["gpus"][1]["persistence_mode"] = {"unavailable": "NVML: Unknown Error"}
    verdict = judge_one(envelope)
    assert one(verdict, "health.persistence_mode", 0).status == "skip"
    failed = one(verdict, "health.persistence_mode", 1)
    assert failed.status == "error" and "could not be read: NVML: Unknown Error" in failed.reason


def test_unavailable_envelope_is_one_check():
    verdict = judge_one(health_unavailable(), overrides={})
    assert [check.id for check in verdict.checks] == ["host.gpu_measured", "health.probe_status"]
    assert verdict.checks[0].status == "warn" and "nvidia-ml-py is not installed" in verdict.checks[0].reason
    check = verdict.checks[1]
    # no expectation set, but the host has /dev/nvidia0 and /dev/nvidia1: the probe should have read them
    assert check.status == "warn"
    assert "nvidia-ml-py is not installed for /usr/bin/python3: pip install nvidia-ml-py" in check.reason
    assert verdict.sku is None and "unavailable" in verdict.sku_reason
    # rules of a probe that gave no data anywhere are reported, as skips
    unmatched = verdict.judgement.unmatched_rules
    assert {rule.status for rule in unmatched} == {"skip"}
    assert len([rule for rule in unmatched if rule.probe == "health"]) == len([rule for rule in rules()["rules"] if rule["probe"] == "health"])


def test_unavailable_envelope_fails_when_gpus_are_expected():
    verdict = judge_one(health_unavailable())
    assert verdict.checks[0].status == "fail" and verdict.verdict == "fail"
    assert "should have 2 GPUs (rule health.gpu_count param expected (inventory override))" in verdict.checks[0].reason


def test_error_envelope_is_one_error_check():
    envelope = health_ok()
    envelope.update({"status": "timeout", "reason": "the probe ran past its 300 s timeout and was killed"})
    verdict = judge_one(envelope)
    assert [(check.id, check.status) for check in verdict.checks] == [("health.probe_status", "error")]
    assert "ended with status timeout: the probe ran past its 300 s timeout" in verdict.checks[0].reason
    assert verdict.verdict == "error"


def test_previous_run_identical_passes():
    verdict = judge_one(health_ok(), previous={"rig": {"health": health_ok()}})
    drift = one(verdict, "drift.driver_version")
    assert drift.status == "pass" and "580.159.04, unchanged since run %s" % RUN_OK in drift.reason
    assert verdict.verdict == "pass"
    assert checks_of(verdict, "drift.gpus")[0].status == "pass"
