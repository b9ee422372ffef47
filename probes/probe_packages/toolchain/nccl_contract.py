"""Contract nccl_loads: NCCL loads in a fresh Python and reports its version.

Two readings from one fresh process: torch.cuda.nccl.version() (torch calls ncclGetVersion in the NCCL it was built
with), and a ctypes load of the libnccl.so file that process has mapped (from /proc/self/maps; else the first
libnccl.so* in torch's lib directory or in site-packages/nvidia/*/lib) with its own ncclGetVersion. The versions must
agree when the file is the one torch has mapped; a file torch does not use is recorded but not compared.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from probe_packages.toolchain.contract import FAIL, PASS, error_text, make_contract, undecided
from probe_packages.toolchain.versions import decode_nccl_code, format_nccl, nccl_from_torch

CONTRACT_ID = "nccl_loads"
EXPECTED = "torch.cuda.nccl.version() works in a fresh Python and the libnccl it uses loads and reports the same version"
REINSTALL = ("Reinstall the CUDA build of torch with its NCCL (for pip wheels the nvidia-nccl-cu* package that torch "
             "requires) in the Python the probes run with.")


def decide(torch: Dict[str, Any], nccl_torch: Optional[Dict[str, Any]], library: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """torch: {torch_version, torch_cuda_version, problem}; nccl_torch: {version} or {error}; library: the child's
    {path, in_use, loaded, rc, code, error, candidates} or None when no libnccl file was found."""
    evidence: List[str] = []
    details: Dict[str, Any] = {"torch_nccl_version": None, "library_path": None, "library_in_use": None,
                               "library_nccl_version": None}
    if torch.get("problem"):
        evidence.append("torch: %s" % torch["problem"])
        return undecided(CONTRACT_ID, torch["problem"], EXPECTED, _torch_remedy(torch["problem"]), evidence, details)
    nccl_torch = nccl_torch or {}
    if "error" in nccl_torch or "version" not in nccl_torch:
        why = error_text(nccl_torch.get("error", "no answer"))
        evidence.append("torch.cuda.nccl.version() in a fresh Python raised %s" % why)
        return make_contract(CONTRACT_ID, FAIL, "torch.cuda.nccl.version() failed: %s" % why, EXPECTED, REINSTALL,
                             evidence, details)
    version, suffix = nccl_from_torch(nccl_torch["version"])
    if version is None:
        why = "torch.cuda.nccl.version() returned %r, which is not a version" % (nccl_torch["version"],)
        evidence.append(why)
        return undecided(CONTRACT_ID, why, EXPECTED, REINSTALL, evidence, details)
    details["torch_nccl_version"] = format_nccl(version, suffix)
    evidence.append("torch.cuda.nccl.version() in a fresh Python: %s" % details["torch_nccl_version"])
    if not library or not library.get("path"):
        evidence.append("no libnccl.so file mapped by the process nor in torch's lib directory or site-packages/nvidia")
        observed = ("NCCL %s answers through torch; no separate libnccl.so file, so NCCL is linked into torch"
                    % details["torch_nccl_version"])
        return make_contract(CONTRACT_ID, PASS, observed, EXPECTED, "", evidence, details)
    details["library_path"] = library["path"]
    details["library_in_use"] = bool(library.get("in_use"))
    where = "mapped by the process" if library.get("in_use") else "found on disk, not mapped by torch"
    if not library.get("loaded"):
        why = error_text(library.get("error", "unknown error"))
        evidence.append("ctypes.CDLL(%s) (%s) failed: %s" % (library["path"], where, why))
        return make_contract(CONTRACT_ID, FAIL, "%s does not load: %s" % (library["path"], why), EXPECTED, REINSTALL,
                             evidence, details)
    code = library.get("code")
    decoded = decode_nccl_code(code) if library.get("rc") == 0 else None
    if decoded is None:
        why = error_text(library["error"]) if library.get("error") else "ncclGetVersion returned %r (code %r)" % (
            library.get("rc"), code)
        evidence.append("ctypes.CDLL(%s) (%s) loaded; %s" % (library["path"], where, why))
        return make_contract(CONTRACT_ID, FAIL, "%s loads but does not report its version: %s" % (library["path"], why),
                             EXPECTED, REINSTALL, evidence, details)
    details["library_nccl_version"] = format_nccl(decoded)
    evidence.append("ctypes.CDLL(%s) (%s): ncclGetVersion = %d (%s)" % (library["path"], where, code,
                                                                        details["library_nccl_version"]))
    if library.get("in_use") and decoded != version:
        observed = "torch reports NCCL %s but the libnccl it has mapped (%s) reports %s" % (
            details["torch_nccl_version"], library["path"], details["library_nccl_version"])
        return make_contract(CONTRACT_ID, FAIL, observed, EXPECTED, REINSTALL, evidence, details)
    observed = "NCCL %s loads (%s, %s)" % (details["torch_nccl_version"], library["path"], where)
    if not library.get("in_use") and decoded != version:
        observed += "; that file reports %s, but torch does not use it" % details["library_nccl_version"]
    return make_contract(CONTRACT_ID, PASS, observed, EXPECTED, "", evidence, details)


def _torch_remedy(problem: str) -> str:
    if "without CUDA" in problem:
        return "Install a CUDA build of torch (it carries NCCL) in the Python the probes run with (gpufleet_python)."
    return "Make torch importable by the Python the probes run with (gpufleet_python), then re-run."
