"""The envelope's status and reason, decided one way for every probe from two facts: did anything fail, and was anything
measured. A result that measured nothing is never ok, even when no failure was recorded.

A probe supplies only what counts as measured, its failed items, how one of them is worded, and the prefix; ``decide``
gives the status and the reason together. A probe whose data holds one entry per device, each with its own status,
decides through probelib.device_outcome.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence, Tuple

from probelib.statuses import ERROR, OK, PARTIAL
NOTHING_MEASURED = "nothing was measured, and no failure was recorded to say why"


def status_of(failed: bool, measured: bool, unmeasured: str = ERROR) -> str:
    """ok: something was measured and nothing failed; partial: something was measured and something failed; otherwise
    ``unmeasured`` (error; a probe whose subject is absent from the host may say unavailable)."""
    if not measured:
        return unmeasured
    return PARTIAL if failed else OK


def reason_of(failures: Sequence[Any], describe: Callable[[Any], str], prefix: str = "failed: ", *, measured: bool = True,
              unmeasured_because: str = "", separator: str = "; ", limit: Optional[int] = None,
              more: str = " (and %d more)") -> str:
    """'' when nothing failed and something was measured (the envelope requires it for ok). Otherwise: when nothing was
    measured, ``unmeasured_because`` first (or NOTHING_MEASURED when no failure says why); then ``prefix`` and the
    failures, each worded by ``describe`` and joined by ``separator``, the first ``limit`` of them (all when None) and
    ``more`` % how many were left out."""
    parts = []
    if not measured:
        parts.append(unmeasured_because or ("" if failures else NOTHING_MEASURED))
    if failures:
        shown = list(failures) if limit is None else list(failures)[:limit]
        left_out = len(failures) - len(shown)
        parts.append("%s%s%s" % (prefix, separator.join(describe(failure) for failure in shown),
                                 more % left_out if left_out > 0 else ""))
    return "; ".join(part for part in parts if part)


def decide(failures: Sequence[Any], describe: Callable[[Any], str], measured: bool, prefix: str = "failed: ", *,
           unmeasured: str = ERROR, unmeasured_because: str = "", separator: str = "; ", limit: Optional[int] = None,
           more: str = " (and %d more)") -> Tuple[str, str]:
    """(status, reason) from the same failed items and the same answer to "was anything measured": ``status_of`` and
    ``reason_of`` above, with their words."""
    return (status_of(bool(failures), measured, unmeasured),
            reason_of(failures, describe, prefix, measured=measured, unmeasured_because=unmeasured_because,
                      separator=separator, limit=limit, more=more))
