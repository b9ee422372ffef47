"""hostbw probe: host<->device copy bandwidth per GPU, pinned and pageable, from the GPU's own NUMA node."""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Tuple

from probe_packages.hostbw.device_run import run_device
from probe_packages.hostbw.plan import make_plan, validate_params
from probe_packages.hostbw.together import data_check_errors
from probe_packages.hostbw.together_phase import together_phase
from probelib import outcome
from probelib.measure.phases import alone_devices
from probelib.measure.together_outcome import run_phase, with_together
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "Measure host-to-device (H2D) and device-to-host (D2H) copy bandwidth of every GPU, from pinned "
    "(page-locked) and pageable host memory, plus pinned H2D and D2H at once on two streams (bidirectional). "
    "The copying thread is pinned to the CPUs of the GPU's NUMA node (sysfs numa_node and local_cpulist of its "
    "PCI device) before the host buffers are allocated, so their pages lie on that node; the original affinity is "
    "restored afterwards. GB/s = bytes copied in one direction / time / 1e9, each byte counted once; timed with "
    "CUDA events around many back-to-back copies after warm-up; median of repeats and their CV; a sample of the "
    "copied data is compared with its source. Without a GPU it times tensor.copy_ between two host buffers "
    "(labelled kind cpu, host-to-host, not PCIe) so that the pipeline still runs. That runs alone, one GPU after "
    "another, on the first GPU (alone_devices: first) or every GPU (all). Then, with two or more workers (GPUs x "
    "workers_per_gpu), the together phase: one worker process per GPU (or per share of one), released together, each "
    "timing pinned H2D then D2H the same way; the workers below one PCIe root port (or on one GPU) share its uplink."
)
METHOD = {
    "bandwidth": "GB/s = bytes copied in one direction / time / 1e9 (GB = 1e9 bytes), each byte counted once; "
                 "bidirectional sums the bytes of both directions",
    "timing": "CUDA events around iterations back-to-back copies after warm-up (perf_counter on the CPU path); "
              "pinned copies are non_blocking, pageable ones are synchronous as torch issues them; median of repeats, "
              "CV = sample standard deviation / mean",
    "data": "random float32 data; after the timed copies check_elements elements spread over the buffer are "
            "compared exactly with the source",
    "numa": "the copying thread is pinned to the GPU's NUMA-local CPUs before the host buffers are allocated and "
            "first touched, and restored afterwards",
    "together": "one worker process per GPU and share (workers_per_gpu), released together at a barrier, each pinned to "
                "its GPU's NUMA CPUs: pinned H2D, then pinned D2H, timed as the alone copies; uplink_sharers counts the "
                "workers whose GPUs sit below the same PCIe root port (sysfs), the worker itself included",
    "link": "pct_of_link_raw compares with the PCIe link's raw rate per direction after line coding (gen 5 x16: "
            "63.0 GB/s), before packet overhead; about 85-90 % is what a healthy link reaches",
}


def collect(params: Dict[str, Any]) -> ProbeResult:
    import torch  # pylint: disable=import-outside-toplevel
    from probelib.measure.devices import measured_devices  # pylint: disable=import-outside-toplevel

    validate_params(params)
    environment = {"torch_version": torch.__version__}
    if torch.version.cuda:
        environment["torch_cuda_version"] = torch.version.cuda
    devices = measured_devices(torch, params["device"])
    if not devices:
        return ProbeResult("unavailable", {"method": METHOD, "plan": make_plan("cuda", params), "devices": [], "errors": []},
                           "device is cuda but torch sees no CUDA GPU (torch.cuda.is_available() is %s)"
                           % torch.cuda.is_available(), environment)
    plan = make_plan(devices[0]["kind"], params)
    snapshots = _open_snapshots() if devices[0]["kind"] == "cuda" else None
    entries: List[Dict[str, Any]] = []
    errors: List[Dict[str, str]] = []
    try:
        for device in alone_devices(devices, params["alone_devices"]):
            entry, device_errors = run_device(torch, device, plan, params, snapshots)
            entries.append(entry)
            errors.extend(device_errors)
        together, failed = run_phase(lambda: together_phase(torch, devices, entries, plan, params, snapshots),
                                     devices[0]["torch_device"])
    finally:
        if snapshots is not None:
            snapshots.close()
    together_errors = [{"device": error["device"], "what": "together", "error": error["error"]}
                       for error in failed + data_check_errors(together)]
    data = {"method": METHOD, "plan": plan, "devices": entries, "errors": errors + together_errors, "together": together}
    status, reason = outcome_of(entries, errors)
    status, reason = with_together(status, reason, together_errors, together)
    return ProbeResult(status, data, reason, environment)


def _open_snapshots() -> Any:
    from probelib.measure.gpu_snapshot import GpuSnapshots  # pylint: disable=import-outside-toplevel
    return GpuSnapshots()


def measured(entries: List[Dict[str, Any]]) -> bool:
    return any("median_gbps" in result for entry in entries for result in entry.get("results", []))


def outcome_of(entries: List[Dict[str, Any]], errors: List[Dict[str, str]]) -> Tuple[str, str]:
    """(status, reason): the reason is empty when every copy ran (the envelope requires it for ok); on the CPU the
    data's note says it was not PCIe."""
    return outcome.decide(errors, lambda error: "%s %s (%s)" % (error["device"], error["what"], error["error"]),
                          measured(entries))


if __name__ == "__main__":
    sys.exit(main("hostbw", DESCRIPTION, collect, requires=("torch",), measures_gpus=True))
