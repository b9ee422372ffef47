"""What ib_write_bw printed: its bandwidth line, and the words of a run that failed.

The format is perftest's (src/perftest_parameters.h): the header RESULT_FMT_G (``--report_gbits``: Gb/s, 10^9 bit) or
RESULT_FMT (MiB/s: format_factor 0x100000), then one line REPORT_FMT (or REPORT_FMT_EXT below 0.1 Gb/s): bytes,
iterations, BW peak, BW average, MsgRate. In duration mode (``-D``) perftest sets noPeak, so the peak it prints is 0.00
(perftest 4.5-0.20 and later also print " WARNING: BW peak won't be measured in this run.").
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[(Gb|MB)/sec\]\s+BW average\[(Gb|MB)/sec\]\s+MsgRate\[Mpps\]")
_NUMBER = r"(\d+(?:\.\d+)?)"
_REPORT = re.compile(r"^\s*(\d+)\s+(\d+)\s+%s\s+%s\s+%s\b" % (_NUMBER, _NUMBER, _NUMBER))
MIB_PER_S_IN_GBPS = 1048576 * 8 / 1e9
# Lines of perftest's output that carry addresses (LID, QPN, GID: the GID holds the port's IP address on RoCE): never
# part of the words recorded for a failed run.
_ADDRESS_LINE = re.compile(r"address:|GID:|\bLID\b|\bQPN\b", re.IGNORECASE)
_RULE = re.compile(r"^[-*\s]*$")
ERROR_LINES = 6
ERROR_CHARS = 400


def parse_bandwidth(stdout: str) -> Optional[Dict[str, Any]]:
    """The first result line under perftest's results header, in Gb/s; None when there is none."""
    lines = stdout.splitlines()
    for index, line in enumerate(lines):
        header = _HEADER.search(line)
        if not header:
            continue
        factor = 1.0 if header.group(2) == "Gb" else MIB_PER_S_IN_GBPS
        for candidate in lines[index + 1:]:
            if _HEADER.search(candidate):
                break
            report = _REPORT.match(candidate)
            if report:
                size, iterations, peak, average, rate = report.groups()
                return {"message_bytes": int(size), "iterations": int(iterations),
                        "peak_gbps": round(float(peak) * factor, 6), "average_gbps": round(float(average) * factor, 6),
                        "message_rate_mpps": float(rate)}
    return None


def error_words(stderr: str, stdout: str = "") -> str:
    """What the tool said about its failure: stderr's lines, else stdout's last lines; no address lines, no rules."""
    said = _meaningful(stderr) or _meaningful(stdout)[-ERROR_LINES:]
    text = "; ".join(said[:ERROR_LINES])
    if len(text) > ERROR_CHARS:
        text = text[:ERROR_CHARS - 3].rstrip() + "..."
    return text or "it printed nothing"


def _meaningful(text: str) -> List[str]:
    return [" ".join(line.split()) for line in text.splitlines()
            if not _RULE.match(line) and not _ADDRESS_LINE.search(line)]
