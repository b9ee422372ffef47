"""The toolchain probe's contracts become checks: pass, fail with the remedy, undecided as skip or error."""

from probe_packages.toolchain.contract import probe_status

from helpers import GPU0, GPU1, RIG_OVERRIDES, baselines, health_ok, judge_fleet, one, recorded, rules

# What the probe records beside a contract decided otherwise than on the rig (its evidence, its machine-readable details),
# and the remedies it gives for an undecided one.
DRIVER_CUDA_12_4 = {
    "evidence": ["NVML nvmlSystemGetCudaDriverVersion: 12040 (CUDA 12.4), driver 550.54.15",
                 "cuDriverGetVersion of /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15 in a fresh Python: 12040 (CUDA 12.4)",
                 "torch 2.11.0+cu130: torch.version.cuda = '13.0' (fresh Python)"],
    "details": {"decided_by": "libcuda", "driver_version": "550.54.15", "forward_compat_libcuda": False,
                "libcuda_cuda_version": "12.4", "minor_version_compatibility": False, "nvml_cuda_version": "12.4",
                "torch_cuda_version": "13.0"}}
CUDA_HANGS = "Find why CUDA hangs or crashes in a fresh Python (run the health probe, read dmesg for Xid errors), then re-run."
CUDA_SILENT = {
    "evidence": ["CUDA_VISIBLE_DEVICES: unset", "NVML: 2 GPU(s): %s, %s" % (GPU0, GPU1),
                 "CUDA side: CUDA did not answer within 120 s"],
    "details": {"cuda_visible_devices": None, "nvml_uuids": [GPU0, GPU1], "expected_uuids": None, "cuda_device_count": None,
                "cuda_uuids": None, "missing_in_cuda": [], "missing_in_nvml": [], "unexpected_in_cuda": [], "notes": []}}
LAUNCH_BLOCKING = ("makes every kernel launch synchronous: no overlap of host and GPU work, so launch-bound and concurrent "
                   "timings are distorted")
CUDA_TORCH = "Install a CUDA build of torch in the Python the probes run with (gpufleet_python) to decide this."
TORCH_WITHOUT_CUDA = {
    "evidence": ["torch: torch built without CUDA"],
    "details": {"torch_nccl_version": None, "library_path": None, "library_in_use": None, "library_nccl_version": None}}


def _launch_blocking_set():
    """no_distorting_environment's evidence and details with CUDA_LAUNCH_BLOCKING set (the rig's list of what it checks)."""
    [recorded_entry] = [entry for entry in recorded("toolchain")["data"]["contracts"] if entry["id"] == "no_distorting_environment"]
    details = dict(recorded_entry["details"], set=["CUDA_LAUNCH_BLOCKING"], why={"CUDA_LAUNCH_BLOCKING": LAUNCH_BLOCKING})
    return {"evidence": recorded_entry["evidence"], "details": details}


LAUNCH_BLOCKING_SET = _launch_blocking_set()


def record(contract_id, status, observed, remedy="", **fields):
    """The rig's recorded contract `contract_id` with `status`, `observed` and `remedy` (and any other field, such as
    its evidence and details) as given."""
    [entry] = [found for found in recorded("toolchain")["data"]["contracts"] if found["id"] == contract_id]
    entry.update(status=status, observed=observed, remedy=remedy, **fields)
    return entry


def toolchain(contracts):
    """The rig's recorded toolchain result with `contracts` in place of its own of the same id (the others pass as
    recorded); status and reason as the probe decides them (partial while a contract is not decided)."""
    envelope = recorded("toolchain")
    given = {entry["id"]: entry for entry in contracts}
    data = envelope["data"]
    data["contracts"] = [given.get(entry["id"], entry) for entry in data["contracts"]]
    status, reason = probe_status(data["contracts"], None, None)
    envelope.update(status=status, reason=reason)
    return envelope


def judge(contracts, with_health=True):
    envelopes = {"toolchain": toolchain(contracts)}
    if with_health:
        envelopes["health"] = health_ok()
    hosts = {"rig": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run6", hosts, baselines(), rules()).hosts["rig"]


def test_each_contract_is_a_check_and_a_failed_one_carries_its_remedy():
    verdict = judge([
        record("driver_supports_cuda_build", "fail", "driver supports CUDA 12.4, torch is built for 13.0",
               "Install a driver of the R580 branch or newer, or a torch build for CUDA <= 12.4.", **DRIVER_CUDA_12_4),
        record("nccl_loads", "pass", "NCCL 2.28.9 loads"),
        record("nvml_cuda_agree", "unavailable", "not decided: CUDA did not answer within 120 s", CUDA_HANGS, **CUDA_SILENT),
        record("no_distorting_environment", "fail", "set: CUDA_LAUNCH_BLOCKING", "Unset CUDA_LAUNCH_BLOCKING before measuring.",
               **LAUNCH_BLOCKING_SET),
    ])
    driver = one(verdict, "toolchain.driver_supports_cuda_build")
    assert driver.status == "fail" and driver.reason.endswith("Remedy: Install a driver of the R580 branch or newer, or a torch "
                                                              "build for CUDA <= 12.4.")
    assert one(verdict, "toolchain.nccl_loads").status == "pass"
    assert one(verdict, "toolchain.nvml_cuda_agree").status == "error"  # an H200 host: it should have been decidable
    assert one(verdict, "toolchain.no_distorting_environment").status == "warn"  # the rule's severity is warn
    assert verdict.verdict == "fail"


def test_an_undecided_contract_on_a_host_of_unknown_sku_is_a_skip():
    verdict = judge([record("nccl_loads", "unavailable", "not decided: torch built without CUDA", CUDA_TORCH,
                            **TORCH_WITHOUT_CUDA)], with_health=False)
    assert one(verdict, "toolchain.nccl_loads").status == "skip"
