"""Contract driver_supports_cuda_build: the CUDA version torch is built for is one the driver supports.

The CUDA runtime inside torch refuses to start (cudaErrorInsufficientDriver) when the driver API in libcuda is older
than the runtime. The driver's CUDA version is read twice: from NVML (nvmlSystemGetCudaDriverVersion_v2, the kernel
driver's), and from cuDriverGetVersion of the libcuda.so.1 that a fresh Python loads (what the runtime checks; a
forward-compatibility libcuda from the cuda-compat package reports a newer version than NVML). The decision uses
libcuda's where it was read, else NVML's.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from probe_packages.toolchain.contract import FAIL, PASS, make_contract, undecided
from probe_packages.toolchain.versions import cuda_version_from_code, driver_hint, format_cuda, parse_cuda_version

CONTRACT_ID = "driver_supports_cuda_build"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "unknown"


def decide(torch: Dict[str, Any], driver: Dict[str, Any]) -> Dict[str, Any]:
    """torch: {torch_version, torch_cuda_version, problem}; driver: {driver_version, nvml_cuda_code, nvml_problem,
    libcuda_code, libcuda_path, libcuda_problem}. Codes are the integers NVML / cuDriverGetVersion return."""
    nvml = cuda_version_from_code(driver.get("nvml_cuda_code"))
    libcuda = cuda_version_from_code(driver.get("libcuda_code"))
    evidence: List[str] = []
    if nvml:
        evidence.append("NVML nvmlSystemGetCudaDriverVersion: %d (CUDA %s), driver %s" % (
            driver["nvml_cuda_code"], format_cuda(nvml), _text(driver.get("driver_version"))))
    else:
        evidence.append("NVML: %s" % (driver.get("nvml_problem") or "no CUDA driver version"))
    if libcuda:
        evidence.append("cuDriverGetVersion of %s in a fresh Python: %d (CUDA %s)" % (
            driver.get("libcuda_path") or "libcuda.so.1", driver["libcuda_code"], format_cuda(libcuda)))
    else:
        evidence.append("libcuda.so.1: %s" % (driver.get("libcuda_problem") or "not read"))
    build = parse_cuda_version(torch.get("torch_cuda_version"))
    if torch.get("problem"):
        evidence.append("torch: %s" % torch["problem"])
    else:
        evidence.append("torch %s: torch.version.cuda = %r (fresh Python)" % (
            _text(torch.get("torch_version")), torch.get("torch_cuda_version")))
    details: Dict[str, Any] = {
        "torch_cuda_version": format_cuda(build) if build else None,
        "driver_version": driver.get("driver_version") if isinstance(driver.get("driver_version"), str) else None,
        "nvml_cuda_version": format_cuda(nvml) if nvml else None,
        "libcuda_cuda_version": format_cuda(libcuda) if libcuda else None,
        "decided_by": None,
        "forward_compat_libcuda": bool(nvml and libcuda and libcuda > nvml),
        "minor_version_compatibility": False,
    }
    expected = "the driver supports the CUDA version torch is built for (torch.version.cuda <= the driver's CUDA version)"
    if torch.get("problem"):
        return undecided(CONTRACT_ID, torch["problem"], expected, _torch_remedy(torch["problem"]), evidence, details)
    if build is None:
        why = "torch.version.cuda %r is not a CUDA version" % (torch.get("torch_cuda_version"),)
        return undecided(CONTRACT_ID, why, expected, "Reinstall a CUDA build of torch.", evidence, details)
    have = libcuda or nvml
    if have is None:
        why = "the driver's CUDA version could not be read (NVML: %s; libcuda: %s)" % (
            driver.get("nvml_problem") or "no value", driver.get("libcuda_problem") or "no value")
        return undecided(CONTRACT_ID, why, expected, "Install the NVIDIA driver and nvidia-ml-py for this Python, then "
                         "re-run.", evidence, details)
    details["decided_by"] = "libcuda" if libcuda else "nvml"
    source = "by libcuda's cuDriverGetVersion" if libcuda else "by NVML"
    observed = "torch %s is built for CUDA %s; the driver %s supports CUDA %s (%s)" % (
        _text(torch.get("torch_version")), format_cuda(build), _text(driver.get("driver_version")), format_cuda(have),
        source)
    if details["forward_compat_libcuda"]:
        observed += ("; the libcuda a CUDA process loads reports CUDA %s while the kernel driver (NVML) reports %s: a "
                     "forward-compatibility libcuda (cuda-compat) is in use" % (format_cuda(libcuda), format_cuda(nvml)))
    if build <= have:
        return make_contract(CONTRACT_ID, PASS, observed, expected, "", evidence, details)
    details["minor_version_compatibility"] = build[0] == have[0]
    if details["minor_version_compatibility"]:
        observed += ("; same major version, so CUDA minor version compatibility may let it start, without the features "
                     "that need the newer driver (such as JIT of newer PTX)")
    remedy = "Install %s, or a torch build for CUDA %s or older." % (driver_hint(build, have[0]), format_cuda(have))
    return make_contract(CONTRACT_ID, FAIL, observed, expected, remedy, evidence, details)


def _torch_remedy(problem: Optional[str]) -> str:
    if problem and "without CUDA" in problem:
        return "Install a CUDA build of torch in the Python the probes run with (gpufleet_python) to decide this."
    return "Make torch importable by the Python the probes run with (gpufleet_python), then re-run."
