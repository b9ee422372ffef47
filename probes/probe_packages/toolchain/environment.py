"""Contract no_distorting_environment: none of the environment variables known to break or distort measurements is set.

Only names are ever recorded, never values. Sources (the ``source`` key of each entry):

- DCGM: NVIDIA DCGM diagnostics, software plugin test env_variables (nvvs/plugin_src/software/Software.cpp,
  checkForBadEnvVaribles: NSIGHT_CUDA_DEBUGGER, CUDA_INJECTION32_PATH, CUDA_INJECTION64_PATH, CUDA_AUTO_BOOST,
  CUDA_ENABLE_COREDUMP_ON_EXCEPTION, CUDA_COREDUMP_FILE, CUDA_DEVICE_WAITS_ON_EXCEPTION, CUDA_PROFILE, COMPUTE_PROFILE,
  OPENCL_PROFILE; dcgm_errors.h DCGM_FR_BAD_CUDA_ENV "Found CUDA performance-limiting environment variable '%s'",
  next step "Please unset this environment variable"). DCGM warns when the variable exists at all.
- CUDA guide: CUDA Programming Guide, appendix "CUDA Environment Variables" (CUDA_LAUNCH_BLOCKING,
  CUDA_DEVICE_MAX_CONNECTIONS, CUDA_DEVICE_MAX_COPY_CONNECTIONS, CUDA_FORCE_PTX_JIT, CUDA_FORCE_JIT,
  CUDA_DEVICE_WAITS_ON_EXCEPTION, CUDA_AUTO_BOOST).
- CUDA-GDB: CUDA-GDB documentation, GPU core dump support (CUDA_ENABLE_COREDUMP_ON_EXCEPTION, CUDA_COREDUMP_*).
- MPS: NVIDIA Multi-Process Service documentation, appendix "Environment Variables".
- NVTX: NVIDIA NVTX headers (nvtxInit loads the tool library named by NVTX_INJECTION64_PATH / NVTX_INJECTION32_PATH).
- ld.so: ld.so(8), LD_PRELOAD.
- PyTorch: PyTorch documentation, "CUDA semantics", memory management (PYTORCH_NO_CUDA_MEMORY_CACHING).
- TF32: NVIDIA deep learning frameworks documentation, TF32 (NVIDIA_TF32_OVERRIDE=0).
- NCCL: NCCL User Guide, "Environment Variables" (NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_IB_DISABLE).

Deliberately absent: CUDA_VISIBLE_DEVICES (it decides which GPUs are measured; contract nvml_cuda_agree compares it),
NCCL_NVLS_ENABLE (the lent H200 machines must run with NVLS off). Where a documented default value switches the
feature off ("0" for CUDA_LAUNCH_BLOCKING, CUDA_FORCE_PTX_JIT / CUDA_FORCE_JIT, the NCCL *_DISABLE switches, the core
dump, wait-on-exception and legacy profiler switches; 8 or more, the default, for the connection counts), a variable set to that value is listed in
``set_inert`` and does not fail the contract; an empty path loads no library. Everything else counts when present, as
in DCGM.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional

from probe_packages.toolchain.contract import FAIL, PASS, make_contract

CONTRACT_ID = "no_distorting_environment"

SOURCES = {
    "DCGM": "NVIDIA DCGM diagnostics, software plugin env_variables test (DCGM_FR_BAD_CUDA_ENV: CUDA performance-limiting "
            "environment variable)",
    "CUDA guide": "CUDA Programming Guide, appendix CUDA Environment Variables",
    "CUDA-GDB": "CUDA-GDB documentation, GPU core dump support",
    "MPS": "NVIDIA Multi-Process Service documentation, appendix Environment Variables",
    "NVTX": "NVIDIA NVTX headers (nvtxInit: NVTX_INJECTION64_PATH / NVTX_INJECTION32_PATH)",
    "ld.so": "ld.so(8), LD_PRELOAD",
    "PyTorch": "PyTorch documentation, CUDA semantics, memory management",
    "TF32": "NVIDIA deep learning frameworks documentation, TF32 (NVIDIA_TF32_OVERRIDE)",
    "NCCL": "NCCL User Guide, Environment Variables",
}


def _zero(value: str) -> bool:
    return value.strip() == "0"


def _empty(value: str) -> bool:
    return not value.strip()


def _default_connections(value: str) -> bool:
    try:
        return int(value.strip()) >= 8
    except ValueError:
        return False


class Variable(NamedTuple):
    """One entry: the name (a trailing * matches a prefix), why it matters, the source key, when its value is inert."""

    name: str
    why: str
    source: str
    inert: Optional[Callable[[str], bool]] = None


INJECTION = ("the CUDA driver loads this tool library into every CUDA process (profilers and tracers such as Nsight and "
             "CUPTI-based tools); its callbacks add time to every API call, kernel and copy")

VARIABLES = (
    Variable("CUDA_INJECTION64_PATH", INJECTION, "DCGM", _empty),
    Variable("CUDA_INJECTION32_PATH", INJECTION, "DCGM", _empty),
    Variable("NSIGHT_CUDA_DEBUGGER", "set when the process runs under the Nsight CUDA debugger, which changes how "
             "kernels execute", "DCGM"),
    Variable("CUDA_AUTO_BOOST", "overrides the GPU's auto boost clock setting (deprecated), so clocks differ from what "
             "nvidia-smi configured", "DCGM"),
    Variable("CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "turns on GPU core dumps on exceptions, a debugging mode of the "
             "driver", "DCGM", _zero),
    Variable("CUDA_COREDUMP_FILE", "configures GPU core dumps (a debugging mode)", "DCGM"),
    Variable("CUDA_COREDUMP_*", "configures GPU core dumps (a debugging mode)", "CUDA-GDB"),
    Variable("CUDA_DEVICE_WAITS_ON_EXCEPTION", "makes a GPU halt and wait for a debugger on an exception instead of "
             "failing", "DCGM", _zero),
    Variable("CUDA_PROFILE", "turns on the legacy command-line profiler, which logs and times every kernel and copy",
             "DCGM", _zero),
    Variable("COMPUTE_PROFILE", "turns on the legacy command-line profiler, which logs and times every kernel and copy",
             "DCGM", _zero),
    Variable("OPENCL_PROFILE", "turns on the legacy OpenCL profiler", "DCGM", _zero),
    Variable("CUDA_LAUNCH_BLOCKING", "makes every kernel launch synchronous: no overlap of host and GPU work, so "
             "launch-bound and concurrent timings are distorted", "CUDA guide", _zero),
    Variable("CUDA_DEVICE_MAX_CONNECTIONS", "fewer hardware work queues than the default 8 serialise work from "
             "independent streams (false dependencies)", "CUDA guide", _default_connections),
    Variable("CUDA_DEVICE_MAX_COPY_CONNECTIONS", "fewer copy queues than the default 8 serialise copies from independent "
             "streams, which bidirectional copy timings rely on", "CUDA guide", _default_connections),
    Variable("CUDA_FORCE_PTX_JIT", "ignores the compiled GPU code and JIT-compiles PTX instead, so other code runs than "
             "the one shipped", "CUDA guide", _zero),
    Variable("CUDA_FORCE_JIT", "ignores the compiled GPU code and JIT-compiles PTX instead, so other code runs than the "
             "one shipped", "CUDA guide", _zero),
    Variable("CUDA_MPS_PIPE_DIRECTORY", "points CUDA at an MPS control daemon: the probes' work then shares the GPUs "
             "through the MPS server with other clients", "MPS", _empty),
    Variable("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "limits the share of SMs an MPS client may use, which caps compute "
             "and bandwidth", "MPS"),
    Variable("NVTX_INJECTION64_PATH", "loads a tool library that receives every NVTX range (profilers set it)", "NVTX",
             _empty),
    Variable("NVTX_INJECTION32_PATH", "loads a tool library that receives every NVTX range (profilers set it)", "NVTX",
             _empty),
    Variable("LD_PRELOAD", "a preloaded library can interpose on CUDA, NCCL and C library calls (profilers, tracers, "
             "shims); which one is not recorded", "ld.so", _empty),
    Variable("PYTORCH_NO_CUDA_MEMORY_CACHING", "bypasses torch's caching allocator, so every allocation and free is a "
             "cudaMalloc / cudaFree inside what the probes time", "PyTorch"),
    Variable("NVIDIA_TF32_OVERRIDE", "read by cuBLAS and cuDNN as a global TF32 switch: 0 keeps them from using TF32 "
             "whatever torch asks, so the tf32 matrix rate becomes the fp32 rate", "TF32"),
    Variable("NCCL_P2P_DISABLE", "turns off NCCL's peer-to-peer transport over NVLink and PCIe; collectives fall back to "
             "shared host memory or the network", "NCCL", _zero),
    Variable("NCCL_SHM_DISABLE", "turns off NCCL's shared-memory transport; NCCL falls back to the network between "
             "GPUs that cannot use P2P", "NCCL", _zero),
    Variable("NCCL_IB_DISABLE", "turns off InfiniBand / RoCE in NCCL; traffic between hosts falls back to IP sockets",
             "NCCL", _zero),
)


def _matches(variable: Variable, name: str) -> bool:
    if variable.name.endswith("*"):
        return name.startswith(variable.name[:-1])
    return name == variable.name


def find_set(environ: Mapping[str, str], variables=VARIABLES) -> Dict[str, List[str]]:
    """{set: names that distort, set_inert: names present with a value that switches the feature off}; names only."""
    found: List[str] = []
    inert: List[str] = []
    for name in sorted(environ):
        entry = next((variable for variable in variables if _matches(variable, name)), None)
        if entry is None:
            continue
        value = environ[name]
        (inert if entry.inert is not None and entry.inert(value) else found).append(name)
    return {"set": found, "set_inert": inert}


def _entry_for(name: str, variables=VARIABLES) -> Optional[Variable]:
    return next((variable for variable in variables if _matches(variable, name)), None)


def checked_list(variables=VARIABLES) -> List[Dict[str, str]]:
    return [{"name": variable.name, "why": variable.why, "source": SOURCES[variable.source]} for variable in variables]


def decide(environ: Mapping[str, str]) -> Dict[str, Any]:
    """Decided from the probe's own environment, which the other probes inherit from the same Ansible task setup."""
    found = find_set(environ)
    details: Dict[str, Any] = {"set": found["set"], "set_inert": found["set_inert"],
                               "why": {name: _entry_for(name).why for name in found["set"]},
                               "checked": checked_list()}
    evidence = ["the probe's environment, by name only: %d known variable(s) or pattern(s) checked" % len(VARIABLES)]
    if found["set_inert"]:
        evidence.append("set to the value that switches the feature off (not counted): %s" % ", ".join(found["set_inert"]))
    expected = "none of %d known measurement-distorting variables is set (DCGM's list and more)" % len(VARIABLES)
    if not found["set"]:
        return make_contract(CONTRACT_ID, PASS, "none set", expected, "", evidence, details)
    observed = "set: %s" % "; ".join("%s (%s)" % (name, details["why"][name]) for name in found["set"])
    remedy = ("Unset %s in the environment the probes run in (the shell profile, the Ansible environment, "
              "/etc/environment or the container image), then re-run." % ", ".join(found["set"]))
    return make_contract(CONTRACT_ID, FAIL, observed, expected, remedy, evidence, details)
