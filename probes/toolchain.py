"""toolchain probe: does the software stack agree with itself? Five contracts, each pass, fail or unavailable."""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, List

from probe_packages.toolchain import devices_contract, driver_contract, environment, nccl_contract, persistence
from probe_packages.toolchain.children import (DEVICES_CHILD, LIBRARIES_CHILD, cuda_devices_state, libcuda_state, run_report,
                                               torch_state)
from probe_packages.toolchain.contract import ORDER, TITLES, probe_status, undecided
from probe_packages.toolchain.nvml_side import read_nvml
from probe_packages.toolchain.versions import cuda_version_from_code, decode_nccl_code, format_cuda, format_nccl, nccl_from_torch
from probelib.fields import SectionErrors, is_unavailable, unavailable
from probelib.nvml.access import NvmlSession
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "Check that the software stack agrees with itself. Five contracts, each a record {id, title, status pass | fail | "
    "unavailable, observed, expected, remedy (one sentence), evidence (what was read), details}: "
    "driver_supports_cuda_build (torch.version.cuda is not newer than the CUDA version the driver supports: NVML's "
    "nvmlSystemGetCudaDriverVersion_v2 and cuDriverGetVersion of the libcuda a fresh Python loads); nccl_loads "
    "(torch.cuda.nccl.version() works in a fresh Python and the libnccl it maps loads by ctypes with the same "
    "ncclGetVersion); nvml_cuda_agree (CUDA, initialised in a fresh Python, shows exactly the GPUs NVML lists that "
    "CUDA_VISIBLE_DEVICES lets through, by UUID; the variable's value is recorded because it decides the expected set); "
    "no_distorting_environment (none of the variables DCGM diagnostics warns about, nor the other known distorting ones "
    "such as CUDA_LAUNCH_BLOCKING, LD_PRELOAD, PYTORCH_NO_CUDA_MEMORY_CACHING or NCCL_P2P_DISABLE, is set: names only, "
    "never values); persistence_mode (NVML reports it enabled on every GPU; the probe never changes it). A contract "
    "that cannot be decided is unavailable with the reason, never pass. Status ok when every contract was decided (a "
    "failed contract is a good measurement), partial when some could not be, unavailable on a host with neither a usable "
    "NVIDIA driver nor a CUDA build of torch."
)
METHOD = {
    "contracts": "five contracts in a fixed order, each pass, fail or unavailable with observed, expected, a one-sentence "
                 "remedy (empty on pass), the evidence read and machine-readable details; a contract that cannot be "
                 "decided is unavailable, never pass",
    "driver_supports_cuda_build": "torch.version.cuda (major.minor) <= the driver's CUDA version; the driver's version is "
                                  "cuDriverGetVersion of the libcuda.so.1 a fresh Python loads where readable (what the "
                                  "CUDA runtime checks; a cuda-compat forward-compatibility libcuda shows there), else "
                                  "NVML nvmlSystemGetCudaDriverVersion_v2; both are recorded, and a newer major version "
                                  "needs the driver branch the CUDA release notes name (R525 for 12.x, R580 for 13.x)",
    "nccl_loads": "in a fresh Python: torch.cuda.nccl.version(), then ctypes.CDLL of the libnccl.so the process has mapped "
                  "(/proc/self/maps; else the first libnccl.so* in torch's lib directory or site-packages/nvidia/*/lib) "
                  "and its ncclGetVersion (code major*10000+minor*100+patch since NCCL 2.9); both must agree for the "
                  "mapped library; no libnccl file at all means NCCL is linked into torch and torch's answer decides",
    "nvml_cuda_agree": "NVML's GPUs (count, UUIDs) against CUDA's in a fresh Python (torch.cuda.device_count(), "
                       "get_device_properties(i).uuid, which initialises CUDA); with CUDA_VISIBLE_DEVICES set the expected "
                       "set is its subset as the CUDA Programming Guide defines it (indices in nvidia-smi order, UUIDs or "
                       "unique UUID prefixes, the first invalid entry hides the rest, empty hides all; indices follow "
                       "NVML's order, which CUDA matches when the GPUs are one model or CUDA_DEVICE_ORDER=PCI_BUS_ID); "
                       "missing UUIDs are named on either side; a CUDA error while NVML shows GPUs is a fail",
    "no_distorting_environment": "the probe's own environment (the one the other probes inherit) against DCGM "
                                 "diagnostics' list of performance-limiting variables plus documented ones from the CUDA "
                                 "Programming Guide, CUDA-GDB, MPS, NVTX, ld.so, PyTorch and NCCL documentation; each "
                                 "entry in details.checked carries why it matters and its source; only names are recorded",
    "persistence_mode": "NVML nvmlDeviceGetPersistenceMode on every GPU NVML lists; read only",
    "subprocesses": "two fresh Pythons ([sys.executable, -c, fixed code]), each in its own process group with "
                    "cuda_timeout_s, killed on timeout; their stderr is not recorded because it can echo environment "
                    "values",
    "status": "ok when every contract was decided; partial when some are unavailable; unavailable when the host has "
              "neither a usable NVIDIA driver (NVML) nor a CUDA build of torch",
}


def open_nvml() -> NvmlSession:
    return NvmlSession().open()


def guarded(errors: SectionErrors, contract_id: str, decide: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
    """A decision that raises becomes an unavailable contract and an entry in errors."""
    result = errors.run(contract_id, decide)
    if is_unavailable(result):
        return undecided(contract_id, result["unavailable"], TITLES[contract_id], "Report this probe error; the other "
                         "contracts still ran.", ["the decision raised (see data.errors)"])
    return result


def software_of(nvml: Dict[str, Any], torch: Dict[str, Any], libcuda: Dict[str, Any], report: Any) -> Dict[str, Any]:
    """The versions every contract used, each a value or {"unavailable": reason}."""
    nvml_cuda = cuda_version_from_code(nvml["cuda_driver_code"])
    libcuda_version = cuda_version_from_code(libcuda["code"])
    no_torch = torch["problem"] or "torch did not report"
    software: Dict[str, Any] = {
        "driver_version": nvml["driver_version"],
        "cuda_driver_version": format_cuda(nvml_cuda) if nvml_cuda else unavailable(nvml["cuda_problem"] or "not read"),
        "libcuda_cuda_version": format_cuda(libcuda_version) if libcuda_version else unavailable(libcuda["problem"]),
        "libcuda_path": libcuda["path"] or unavailable(libcuda["problem"] or "not mapped"),
        "torch_version": torch["torch_version"] or unavailable(no_torch),
        "torch_cuda_version": torch["torch_cuda_version"] or unavailable(no_torch),
        "nccl_version": unavailable(no_torch),
        "nccl_library_path": unavailable(no_torch),
    }
    if report and not torch["problem"]:
        nccl = report.get("nccl_torch") or {}
        version, suffix = nccl_from_torch(nccl.get("version"))
        software["nccl_version"] = format_nccl(version, suffix) if version else unavailable(
            "torch.cuda.nccl.version() failed: %s" % (nccl.get("error") or {}).get("message", "no answer"))
        library = report.get("nccl_library") or {}
        software["nccl_library_path"] = library.get("path") or unavailable("no libnccl.so file: linked into torch")
        decoded = decode_nccl_code(library.get("code")) if library.get("rc") == 0 else None
        if decoded:
            software["nccl_library_version"] = format_nccl(decoded)
    return software


def collect(params: Dict[str, Any]) -> ProbeResult:
    timeout_s = float(params["cuda_timeout_s"])
    errors = SectionErrors()
    session = open_nvml()
    try:
        nvml = errors.run("nvml", lambda: read_nvml(session))
    finally:
        session.close()
    if is_unavailable(nvml):
        nvml = {"initialized": False, "problem": nvml["unavailable"], "driver_version": nvml, "cuda_driver_code": None,
                "cuda_function": None, "cuda_problem": nvml["unavailable"], "devices": None}
    libraries = run_report(LIBRARIES_CHILD, timeout_s)
    torch = torch_state(libraries)
    libcuda = libcuda_state(libraries["report"], libraries["failure"])
    report = libraries["report"] or {}
    if torch["problem"] and torch["absent"]:
        devices = {"report": {"stage": "build"}, "failure": None}  # no CUDA to initialise: spare the second process
    else:
        devices = run_report(DEVICES_CHILD, timeout_s)
    cuda = cuda_devices_state(devices, torch)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    nvml_uuids = [device["uuid"] for device in nvml["devices"]] if nvml["devices"] is not None else None
    mig_enabled = [device["index"] for device in nvml["devices"] or [] if device.get("mig_enabled")]
    driver = {"driver_version": nvml["driver_version"], "nvml_cuda_code": nvml["cuda_driver_code"],
              "nvml_problem": nvml["cuda_problem"], "libcuda_code": libcuda["code"], "libcuda_path": libcuda["path"],
              "libcuda_problem": libcuda["problem"]}
    deciders = {
        "driver_supports_cuda_build": lambda: driver_contract.decide(torch, driver),
        "nccl_loads": lambda: nccl_contract.decide(torch, report.get("nccl_torch"), report.get("nccl_library")),
        "nvml_cuda_agree": lambda: devices_contract.decide({"uuids": nvml_uuids, "problem": nvml["problem"],
                                                            "mig_enabled": mig_enabled}, visible, cuda),
        "no_distorting_environment": lambda: environment.decide(os.environ),
        "persistence_mode": lambda: persistence.decide(nvml["devices"], nvml["problem"]),
    }
    contracts: List[Dict[str, Any]] = [guarded(errors, contract_id, deciders[contract_id]) for contract_id in ORDER]
    software = software_of(nvml, torch, libcuda, report)
    no_driver = None if nvml["initialized"] else (nvml["problem"] or "NVML is not usable")
    status, reason = probe_status(contracts, no_driver, torch["problem"] if torch["absent"] else None)
    if errors.errors and status == "ok":
        status, reason = "partial", "a section raised: %s" % "; ".join(entry["section"] for entry in errors.errors)
    environment_block = {"torch_version": software["torch_version"] if isinstance(software["torch_version"], str)
                         else "not importable",
                         "torch_cuda_version": torch["torch_cuda_version"] or "none (CPU build or no torch)"}
    if isinstance(nvml["driver_version"], str):
        environment_block["driver_version"] = nvml["driver_version"]
    data = {"method": METHOD, "contracts": contracts, "software": software, "errors": errors.errors}
    return ProbeResult(status, data, reason, environment_block)


if __name__ == "__main__":
    sys.exit(main("toolchain", DESCRIPTION, collect))
