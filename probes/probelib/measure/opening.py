"""The opening of a probe that measures every GPU with torch (membw, memtest, fusion): the parameters checked, torch's
versions for the result's environment (torch_environment: the environment of gemm, p2p, precision and load too), the
devices measured (measure/devices.py: every visible GPU, else the CPU, or as the device parameter asks), the
measurement's kind and plan, and the unavailable result where device is 'cuda' and torch sees no GPU."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional

from probelib.measure.devices import measured_devices
from probelib.runner import ProbeResult


class PerGpuOpening(NamedTuple):
    devices: List[Dict[str, Any]]
    kind: str
    plan: Dict[str, Any]
    environment: Dict[str, Any]
    no_gpu: Optional[ProbeResult]  # the result to return at once: no GPU where only GPUs were asked for


def torch_environment(torch: Any) -> Dict[str, Any]:
    return {"torch_version": torch.__version__, "torch_cuda_version": torch.version.cuda or "none (CPU build)"}


def open_per_gpu(torch: Any, params: Dict[str, Any], check_params: Callable[[Dict[str, Any]], None],
                 resolve_plan: Callable[[Dict[str, Any], str], Dict[str, Any]],
                 method_of: Callable[[str], Dict[str, Any]]) -> PerGpuOpening:
    """The parameters checked (check_params raises ParameterError), the devices of params["device"] and the plan for
    their kind (resolve_plan(params, kind)); without a device, no_gpu is the unavailable result, its data the CUDA
    method and plan with no device and no error."""
    check_params(params)
    environment = torch_environment(torch)
    devices = measured_devices(torch, params["device"])
    if not devices:
        plan = resolve_plan(params, "cuda")
        nothing = ProbeResult("unavailable", {"method": method_of("cuda"), "plan": plan, "devices": [], "errors": []},
                              "no CUDA GPU is visible to torch %s and device is 'cuda'" % torch.__version__, environment)
        return PerGpuOpening([], "cuda", plan, environment, nothing)
    kind = devices[0]["kind"]
    return PerGpuOpening(devices, kind, resolve_plan(params, kind), environment, None)


def per_gpu_collect(check_params: Callable[[Dict[str, Any]], None], resolve_plan: Callable[[Dict[str, Any], str], Dict[str, Any]],
                    method_of: Callable[[str], Dict[str, Any]], measure: Callable[[Any, Dict[str, Any], PerGpuOpening], ProbeResult],
                    no_gpu_data: Optional[Callable[[], Dict[str, Any]]] = None) -> Callable[[Dict[str, Any]], ProbeResult]:
    """A per-GPU probe's collect(params): torch imported only when it runs, the opening (open_per_gpu), then
    measure(torch, params, opened); without a GPU, the unavailable result at once, with no_gpu_data()'s keys added."""
    def collect(params: Dict[str, Any]) -> ProbeResult:
        import torch  # pylint: disable=import-outside-toplevel

        opened = open_per_gpu(torch, params, check_params, resolve_plan, method_of)
        if opened.no_gpu is None:
            return measure(torch, params, opened)
        if no_gpu_data is not None:
            opened.no_gpu.data.update(no_gpu_data())
        return opened.no_gpu
    return collect
