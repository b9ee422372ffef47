"""Pure assembly of the run: src x dst matrices of the headline numbers (as nvbandwidth prints them), status, reason."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from probelib import outcome
from probelib.fields import unavailable

MAX_REASONS = 8


def _cell(pair: Any, read: Callable[[Dict[str, Any]], Any], section: str) -> Any:
    if pair is None:
        return unavailable("this pair was not run")
    value = pair.get(section)
    if value is None:
        if "error" in pair:
            return unavailable("not measured: %s" % pair["error"])
        return unavailable("not measured: %s is turned off in the plan" % section)
    return read(value)


def assemble_matrix(count: int, pairs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Rows are sources, columns destinations, indexed by torch GPU index; the diagonal is null (no pair)."""
    by_pair = {(pair["src"], pair["dst"]): pair for pair in pairs}
    tables: Dict[str, Any] = {"gpus": list(range(count)), "rows": "src", "columns": "dst"}
    readers = (("unidirectional_gbps", "unidirectional", lambda section: section["headline_gbps"]),
               ("bidirectional_gbps", "bidirectional", lambda section: section["headline_gbps"]),
               ("latency_us", "latency", lambda section: section["median_us"]))
    for key, section, read in readers:
        tables[key] = [[None if src == dst else _cell(by_pair.get((src, dst)), read, section) for dst in range(count)]
                       for src in range(count)]
    tables["link_class"] = [[None if src == dst else by_pair[(src, dst)]["link_class"] if (src, dst) in by_pair
                             else unavailable("this pair was not run") for dst in range(count)] for src in range(count)]
    return tables


def measured(pairs: List[Dict[str, Any]]) -> bool:
    return any("unidirectional" in pair for pair in pairs)


def run_outcome(pairs: List[Dict[str, Any]], errors: List[Dict[str, str]]) -> Tuple[str, str]:
    """(status, reason). ok: a pair measured and nothing failed (every pair measured and verified); partial: some
    measured; error: none. The reason is empty for ok (the envelope requires it); else the failures, the first few in
    full."""
    return outcome.decide(errors, lambda error: "%s %s (%s)" % (error["pair"], error["what"], error["error"]),
                          measured(pairs), "%d pair(s) failed: " % len({error["pair"] for error in errors}),
                          limit=MAX_REASONS, more=" and %d more (see data.errors)")
