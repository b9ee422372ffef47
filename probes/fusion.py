"""fusion probe: y = gelu(x * a + b) * c as 4 eager kernels and as one compiled kernel, with the bytes each must move."""
from __future__ import annotations

import sys
from typing import Any, Dict

from probe_packages.fusion import traffic
from probe_packages.fusion.chain import BACKEND
from probe_packages.fusion.device_run import DeviceRun
from probe_packages.fusion.plan import check_params, resolve_plan
from probe_packages.fusion.together import guarded_phase, together_entries, worker_errors
from probelib import device_outcome
from probelib.measure.opening import PerGpuOpening, per_gpu_collect
from probelib.measure.phases import alone_devices
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "Run y = gelu(x * a + b) * c over N elements on the first GPU (alone_devices: all: every GPU, one after another; "
    "or on the CPU when there is none) twice: unfused, as "
    "torch eager's 4 kernels (mul, add, gelu, mul), each writing its intermediate to memory for the next to read back; "
    "and fused, torch.compile with the inductor backend (one generated kernel: Triton on a GPU, C++ on the CPU). Where "
    "compiling fails the fused version is recorded as unavailable with the exception's words, never measured in eager "
    "under its name. The bytes each version must move are counted (unfused 11 x N x element_bytes, fused 5 x N x "
    "element_bytes); each version is timed (warm-up, then the median of repeats, CUDA events on a GPU), its achieved "
    "bandwidth set against the membw copy plateau of the same run, and the measured speed-up against the 2.2x the "
    "traffic ratio predicts, with a sentence where they differ. The outputs are compared within a dtype tolerance. "
    "Then every GPU at once (workers_per_gpu processes each, released together after their compile) at the largest "
    "size; not run with one GPU and one worker."
)


def method_of(kind: str) -> Dict[str, Any]:
    timing = ("CUDA events on the current stream around back-to-back calls, after a warm-up; the median of the repeats"
              if kind == "cuda" else "time.perf_counter around back-to-back calls, after a warm-up; the median of the repeats")
    return {
        "operation": "y = gelu(x * a + b) * c (gelu exact, erf), x, a, b, c of N elements, torch.rand in [0, 1)",
        "unfused": "torch eager: mul, add, gelu, mul, each its own kernel writing its intermediate to memory",
        "fused": ("torch.compile(backend=%r, fullgraph=True, dynamic=False) compiled afresh for each size after "
                  "torch._dynamo.reset(), with suppress_errors off so that a failure raises instead of falling back to "
                  "eager" % BACKEND),
        "bytes_counted": traffic.derivation(),
        "bandwidth_definition": "achieved_gbps = traffic_bytes / time_per_iteration_s / 1e9 (GB = 1e9 bytes)",
        "timing": timing,
        "verification": ("once per size: the fused and unfused outputs agree where |fused - unfused| <= atol + rtol x "
                         "|unfused| for every element; a disagreement is an error for that size and its fused time is "
                         "not taken"),
        "membw_reference": ("of_membw_pct = achieved_gbps / the membw headline bandwidth of the same device in this run "
                            "(membw counts read + written bytes too)"),
    }


def measure(torch: Any, params: Dict[str, Any], opened: PerGpuOpening) -> ProbeResult:
    devices, kind, plan, environment = opened.devices, opened.kind, opened.plan, opened.environment
    results = [DeviceRun(torch, device, plan, params["membw_bandwidth_gbps"], params["membw_bandwidth_source"]).run()
               for device in alone_devices(devices, params["alone_devices"])]
    errors = [{"device": "%s:%d" % (entry["device"]["kind"], entry["device"]["index"]), "error": problem}
              for entry in results for problem in entry["problems"]]
    data = {"method": method_of(kind), "traffic": traffic.accounting(), "plan": plan, "devices": results,
            "errors": errors}
    # the together phase (issue 35): every device at once, after the alone phase has given its reference
    data["together"] = guarded_phase(devices, plan, params, results)
    failed = together_entries(data["together"], kind, devices[0]["index"])
    data["errors"].extend(worker_errors(failed))
    status, reason = device_outcome.decide(results + failed)
    return ProbeResult(status, data, reason, environment)


collect = per_gpu_collect(check_params, resolve_plan, method_of, measure, no_gpu_data=lambda: {"traffic": traffic.accounting()})

if __name__ == "__main__":
    sys.exit(main("fusion", DESCRIPTION, collect, requires=("torch",), measures_gpus=True))
