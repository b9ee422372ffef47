"""Read what the peer tools print, and put their numbers beside the probes' at the same sizes. Pure: stdlib only.

nccl-tests' `all_reduce_perf` prints one row per message size (size, count, type, redop, root, then time in us, algbw
and busbw in GB/s and #wrong, out of place and again in place); nvbandwidth with `--json` prints one document whose
testcases each hold a bandwidth matrix in GB/s (rows: the GPU the copy reads from, columns: the GPU it writes to;
"N/A" on the diagonal). GB is 1e9 bytes in both, as in the probes.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence

ALL_REDUCE_COLUMNS = 13  # size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong


def _number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None  # "N/A" (no data check) or a field a later version of the tool writes differently


def parse_all_reduce_perf(text: str) -> Dict[str, Any]:
    """{"rows": [{size_bytes, out_of_place: {time_us, algbw_gbps, busbw_gbps, wrong}, in_place: {...}}],
    "avg_busbw_gbps", "out_of_bounds", "ranks"}; raises ValueError when the text holds no result row."""
    rows: List[Dict[str, Any]] = []
    summary: Dict[str, Any] = {"avg_busbw_gbps": None, "out_of_bounds": None, "ranks": 0}
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#  Rank ") or stripped.startswith("# Rank "):
            summary["ranks"] += 1  # one line per rank under "# Using devices"
        elif stripped.startswith("# Avg bus bandwidth"):
            summary["avg_busbw_gbps"] = _number(stripped.split(":", 1)[1].split()[0])
        elif stripped.startswith("# Out of bounds values"):
            summary["out_of_bounds"] = _number(stripped.split(":", 1)[1].split()[0])
        if not stripped or stripped.startswith("#"):
            continue
        fields = stripped.split()
        if len(fields) < ALL_REDUCE_COLUMNS or not fields[0].isdigit():
            continue  # a line NCCL or the tool printed between the rows (INFO, a warning)
        halves = {}
        for name, start in (("out_of_place", 5), ("in_place", 9)):
            time_us, algbw, busbw, wrong = (_number(field) for field in fields[start:start + 4])
            halves[name] = {"time_us": time_us, "algbw_gbps": algbw, "busbw_gbps": busbw, "wrong": wrong}
        rows.append(dict(size_bytes=int(fields[0]), count=int(fields[1]), type=fields[2], redop=fields[3], **halves))
    if not rows:
        raise ValueError("no all_reduce_perf result row in the text (%d lines)" % len(text.splitlines()))
    return dict(summary, rows=rows)


def parse_nvbandwidth_json(text: str) -> Dict[str, Dict[str, Any]]:
    """{testcase name: {"status", "matrix_gbps": [[float | None]], "sum_gbps", "buffer_size_mib", "error"}} from the
    output of `nvbandwidth --json`; raises ValueError when it is not that document."""
    try:
        document = json.loads(text[text.index("{"):])
    except ValueError as exc:
        raise ValueError("nvbandwidth printed no JSON document: %s" % exc) from None
    top = document.get("nvbandwidth") if isinstance(document, dict) else None
    if not isinstance(top, dict) or not isinstance(top.get("testcases"), list):
        raise ValueError("not an nvbandwidth --json document: no nvbandwidth.testcases")
    cases: Dict[str, Dict[str, Any]] = {}
    for case in top["testcases"]:
        matrix = case.get("bandwidth_matrix") or []
        cases[str(case.get("name"))] = {
            "status": case.get("status"),
            "matrix_gbps": [[_number(str(cell)) for cell in row] for row in matrix],
            "sum_gbps": _number(str(case.get("sum"))) if case.get("sum") is not None else None,
            "buffer_size_mib": _number(str(case.get("bufferSize"))) if case.get("bufferSize") is not None else None,
            "error": case.get("error"),
        }
    return cases


def percent_difference(probe: Optional[float], tool: Optional[float]) -> Optional[float]:
    """(probe - tool) / tool in percent; None when either is missing or the tool's is zero."""
    if probe is None or tool is None or tool == 0:
        return None
    return (probe - tool) / tool * 100.0


def all_reduce_beside(probe_sweep: Sequence[Mapping[str, Any]], tool: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The probe's busbw and nccl-tests' at every size both measured. The probe all-reduces in place (torch's
    dist.all_reduce), so the in-place column is the one compared; the out-of-place one is shown beside it."""
    by_size = {row["size_bytes"]: row for row in tool["rows"]}
    rows = []
    for point in probe_sweep:
        theirs = by_size.get(point["size_bytes"])
        if theirs is None:
            continue
        rows.append({"size_bytes": point["size_bytes"], "probe_busbw_gbps": point.get("busbw_gbps"),
                     "nccl_tests_in_place_busbw_gbps": theirs["in_place"]["busbw_gbps"],
                     "nccl_tests_out_of_place_busbw_gbps": theirs["out_of_place"]["busbw_gbps"],
                     "difference_pct": percent_difference(point.get("busbw_gbps"), theirs["in_place"]["busbw_gbps"])})
    return rows


def matrix_cell(case: Optional[Mapping[str, Any]], src: int, dst: int) -> Optional[float]:
    """The GB/s an nvbandwidth testcase measured from src to dst, None where it has none."""
    if not case:
        return None
    matrix = case.get("matrix_gbps") or []
    if src >= len(matrix) or dst >= len(matrix[src]):
        return None
    return matrix[src][dst]


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """A Markdown table of rows (numbers to 4 significant digits, a missing value as —)."""
    def cell(value: Any) -> str:
        if value is None:
            return "—"
        if isinstance(value, float):
            return "%.4g" % value
        return str(value)
    lines = ["| %s |" % " | ".join(columns), "|%s" % "".join(" ---: |" for unused in columns)]
    lines += ["| %s |" % " | ".join(cell(row.get(column)) for column in columns) for row in rows]
    return "\n".join(lines)
