"""The contract record every decision returns, and the probe's status from the records."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

PASS, FAIL, UNAVAILABLE = "pass", "fail", "unavailable"

TITLES = {
    "driver_supports_cuda_build": "The NVIDIA driver supports the CUDA version torch is built for",
    "nccl_loads": "NCCL loads and reports its version",
    "nvml_cuda_agree": "NVML and CUDA agree on the visible GPUs",
    "no_distorting_environment": "No environment variable that breaks or distorts measurements is set",
    "persistence_mode": "Persistence mode is enabled on every GPU",
}
ORDER = tuple(TITLES)


def error_text(error: Any) -> str:
    """A fresh Python's error record ({type, message}) as "type: message"; anything else as its text."""
    if isinstance(error, dict):
        return "%s: %s" % (error.get("type", "Error"), error.get("message", ""))
    return str(error)


def make_contract(contract_id: str, status: str, observed: str, expected: str, remedy: str,
                  evidence: Sequence[str], details: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One record; a passed contract has no remedy, any other has one sentence saying what to do."""
    if contract_id not in TITLES:
        raise ValueError("unknown contract %r" % contract_id)
    if status not in (PASS, FAIL, UNAVAILABLE):
        raise ValueError("unknown contract status %r" % status)
    return {
        "id": contract_id,
        "title": TITLES[contract_id],
        "status": status,
        "observed": observed,
        "expected": expected,
        "remedy": "" if status == PASS else remedy,
        "evidence": list(evidence),
        "details": dict(details or {}),
    }


def undecided(contract_id: str, why: str, expected: str, remedy: str, evidence: Sequence[str],
              details: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """A contract that could not be decided: observed says why, never pass."""
    return make_contract(contract_id, UNAVAILABLE, "not decided: %s" % why, expected, remedy, evidence, details)


def probe_status(contracts: List[Dict[str, Any]], no_driver: Optional[str], no_cuda_torch: Optional[str]) -> Tuple[str, str]:
    """ok when every contract was decided (a failed contract is still a good measurement); unavailable when the host
    has neither a usable NVIDIA driver nor a CUDA build of torch; partial otherwise, naming what was not decided."""
    open_ones = [entry for entry in contracts if entry["status"] == UNAVAILABLE]
    if no_driver and no_cuda_torch:
        decided = [entry["id"] for entry in contracts if entry["status"] != UNAVAILABLE]
        return UNAVAILABLE, "no usable NVIDIA driver (%s) and no CUDA build of torch (%s); decided: %s" % (
            no_driver, no_cuda_torch, ", ".join(decided) or "nothing")
    if not open_ones:
        return "ok", ""
    return "partial", "%d of %d contracts not decided: %s" % (
        len(open_ones), len(contracts), "; ".join("%s (%s)" % (entry["id"], entry["observed"]) for entry in open_ones))
