"""What a probe's together phase adds to its envelope: the phase run so that its failure never costs the alone results,
the workers that failed, and the probe's status and reason with them (a worker that failed makes an otherwise ok probe
partial; the alone phase decides the rest)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from probelib.statuses import ERROR, OK, PARTIAL


def worker_errors(record: Any) -> List[Dict[str, str]]:
    """{device: "cuda:0", error: "together worker 1: ..."} of each worker the together record says failed."""
    workers = record.get("workers") if isinstance(record, dict) else None
    errors = []
    for worker in workers if isinstance(workers, list) else []:
        if worker.get("status") != "ok":
            errors.append({"device": "%s:%d" % (worker["kind"], worker["device_index"]),
                           "error": "together worker %d: %s" % (worker["worker"], worker.get("error") or "no result")})
    return errors


def measured(record: Any) -> bool:
    """Did a worker of the together record measure (end ok)?"""
    workers = record.get("workers") if isinstance(record, dict) else None
    return any(worker.get("status") == "ok" for worker in workers if isinstance(worker, dict)) if isinstance(workers, list) else False


def with_together(status: str, reason: str, errors: List[Dict[str, str]], record: Any = None) -> Tuple[str, str]:
    """The alone phase's (status, reason) with the together phase's failed workers added; an alone phase that measured
    nothing is partial, not error, where a together worker measured."""
    if status == ERROR and measured(record):
        status = PARTIAL
    if not errors:
        return status, reason
    words = "the together phase failed on %s" % "; ".join("%s: %s" % (error["device"], error["error"]) for error in errors)
    return (PARTIAL if status == OK else status), ("%s; %s" % (reason, words) if reason else words)


def run_phase(phase: Callable[[], Dict[str, Any]], where: str) -> Tuple[Dict[str, Any], List[Dict[str, str]]]:
    """(data["together"], its errors): what phase() returns and its failed workers, or, where phase() itself raised,
    unavailable with the exception's words and that one error named after ``where`` (the first device, "cuda:0")."""
    try:
        record = phase()
    except Exception as exc:  # the alone phase's results stand; the error makes the probe partial
        words = "%s: %s" % (type(exc).__name__, str(exc)[:1000])
        return {"unavailable": "the together phase failed: %s" % words}, [{"device": where, "error": words}]
    return record, worker_errors(record)
