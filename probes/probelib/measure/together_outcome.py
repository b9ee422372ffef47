"""What a probe's together phase adds to its envelope: the phase run so that its failure never costs the alone results,
the workers that failed, and the probe's status and reason with them (a worker that failed makes an otherwise ok probe
partial; the alone phase decides the rest). Every per-GPU probe runs its phase through guarded (or run_phase) and names
its failed workers with failed_workers and failure_words, whatever the shape of its errors list."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from probelib.statuses import ERROR, OK, PARTIAL

PHASE_FAILED = "the together phase failed: "


def failed_workers(record: Any) -> List[Dict[str, Any]]:
    """The workers the together record says did not end ok (none where the phase did not run)."""
    workers = record.get("workers") if isinstance(record, dict) else None
    return [worker for worker in workers if isinstance(worker, dict) and worker.get("status") != "ok"] if isinstance(workers, list) else []


def failure_words(worker: Dict[str, Any]) -> str:
    """'together worker 1: <its error>'."""
    return "together worker %d: %s" % (worker["worker"], worker.get("error") or "no result")


def worker_errors(record: Any) -> List[Dict[str, str]]:
    """{device: "cuda:0", error: "together worker 1: ..."} of each worker the together record says failed."""
    return [{"device": "%s:%d" % (worker["kind"], worker["device_index"]), "error": failure_words(worker)}
            for worker in failed_workers(record)]


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


def guarded(phase: Callable[[], Dict[str, Any]]) -> Tuple[Dict[str, Any], Optional[str]]:
    """(what phase() returns, None), or, where phase() itself raised, (unavailable with the exception's words, the words)."""
    try:
        return phase(), None
    except Exception as exc:  # the alone phase's results stand; the error makes the probe partial
        words = "%s: %s" % (type(exc).__name__, str(exc)[:1000])
        return {"unavailable": PHASE_FAILED + words}, words


def run_phase(phase: Callable[[], Dict[str, Any]], where: str) -> Tuple[Dict[str, Any], List[Dict[str, str]]]:
    """(data["together"], its errors): what phase() returns and its failed workers, or, where phase() itself raised,
    unavailable with the exception's words and that one error named after ``where`` (the first device, "cuda:0")."""
    record, failure = guarded(phase)
    if failure is not None:
        return record, [{"device": where, "error": failure}]
    return record, worker_errors(record)
