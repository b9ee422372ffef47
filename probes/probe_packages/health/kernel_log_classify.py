"""Classify kernel-log lines by kernel_log_patterns.PATTERNS into events: kind, device, the line (capped, credentials
redacted), its time, and what the line itself says (SXID number and severity, the limited link ...).

Counts are of every matching line; the events recorded are capped per kind (the first MAX_EVENTS_PER_KIND), and the
lines not recorded are counted in events_not_recorded. One PCIe error is printed as a root port's notice ("AER:
Corrected error received: <dev>") followed by the device's own "PCIe Bus Error: severity=..." line: the second is
folded into the first, so a count is a count of errors, not of lines.
"""
from __future__ import annotations

import collections
import re
from typing import Any, Dict, List, Optional, Tuple

from probe_packages.health.kernel_log_patterns import PATTERNS, KernelLogPattern
from probe_packages.health.kernel_log_reader import line_time
from probelib.secret_shapes import CREDENTIAL_MARKER, TOKEN, is_high_entropy
from probelib.system.sysfs import normalize_bus_id

MAX_EVENTS_PER_KIND = 100
MAX_LINE_CHARS = 300
# How many lines after a root port's AER notice the device's own "PCIe Bus Error" line may come.
AER_DETAIL_WITHIN_LINES = 4
# How many lines after "NVRM: The NVIDIA GPU <pci>" a "fallen off the bus" line without an address may come.
GPU_ADDRESS_WITHIN_LINES = 3
AER_KINDS = ("pcie_aer_corrected", "pcie_aer_uncorrected", "pcie_aer_fatal")

_XID_LINE = re.compile(r"NVRM: Xid \(")
_NVRM_GPU = re.compile(r"NVRM: (?:The NVIDIA GPU |GPU at PCI:|GPU )(?P<pci>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}"
                       r"(?:\.[0-7])?)\b")
_LINE_PCI = re.compile(r"\b(?P<pci>[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): ")
_WORD = re.compile(r"\S+")


def recorded_line(line: str) -> str:
    """The line as recorded: credential-shaped words replaced, cut to MAX_LINE_CHARS."""
    text = TOKEN.sub(CREDENTIAL_MARKER, line.strip())
    text = _WORD.sub(lambda match: CREDENTIAL_MARKER if is_high_entropy(match.group(0)) else match.group(0), text)
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS - 1] + "\u2026"


def _pci(text: Optional[str]) -> Optional[str]:
    if not text:
        return None
    try:
        return normalize_bus_id(text)
    except ValueError:
        return None


def _detail(pattern: KernelLogPattern, match: "re.Match[str]") -> Dict[str, Any]:
    groups = match.groupdict()
    if pattern.kind == "sxid":
        return {"sxid": int(groups["sxid"]), "fatal": groups["severity"] == "Fatal", "switch": groups["switch"]}
    if pattern.kind in ("mlx5_pcie_limited", "pcie_limited"):
        return {"limited_by": groups["limit"], "at": groups["at"]}
    if groups.get("bridge"):
        return {"bridge": groups["bridge"]}
    if groups.get("pci"):
        return {"pci_address": _pci(groups["pci"]) or groups["pci"]}
    return {}


def _device(pattern: KernelLogPattern, match: "re.Match[str]", line: str, recent_gpu: Optional[str]) -> Optional[str]:
    groups = match.groupdict()
    if pattern.kind in AER_KINDS:
        source = groups.get("source")
        if source is not None:
            # The notice names the device that sent the error; an old kernel names only its id: the port then.
            named = _pci(source)
            if named:
                return named
            port = _LINE_PCI.search(line)
            return _pci(port.group("pci")) if port else None
        return _pci(groups.get("device"))
    device = groups.get("device")
    if pattern.kind == "fallen_off_bus":
        return _pci(device) or recent_gpu
    if pattern.kind in ("sxid", "mlx5_fatal", "mlx5_pcie_limited", "pcie_limited"):
        return _pci(device) or device
    return device


def classify_line(line: str, recent_gpu: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The event a line is ({kind, device, line, time, detail}), or None for a line no pattern (or an XID) claims.
    recent_gpu: the address of "NVRM: The NVIDIA GPU <pci>" a few lines before, for a fallen-off line without one."""
    if _XID_LINE.search(line):
        return None
    for pattern in PATTERNS:
        match = pattern.regex.search(line)
        if match:
            return {"kind": pattern.kind, "device": _device(pattern, match, line, recent_gpu), "line": recorded_line(line),
                    "time": line_time(line), "detail": _detail(pattern, match),
                    "notice": pattern.kind in AER_KINDS and match.groupdict().get("source") is not None}
    return None


def classify_lines(lines: List[str]) -> Dict[str, Any]:
    """{"events": [...], "counts": {kind: n}, "events_not_recorded": {kind: n}} of the lines, in their order."""
    events: List[Dict[str, Any]] = []
    counts: Dict[str, int] = collections.Counter()
    not_recorded: Dict[str, int] = collections.Counter()
    recent_gpu: Tuple[Optional[str], int] = (None, -GPU_ADDRESS_WITHIN_LINES - 1)
    last_notice: Tuple[Optional[Tuple[str, Optional[str]]], int] = (None, -AER_DETAIL_WITHIN_LINES - 1)
    for number, line in enumerate(lines):
        gpu = _NVRM_GPU.search(line)
        if gpu:
            recent_gpu = (_pci(gpu.group("pci")), number)
        near_gpu = recent_gpu[0] if number - recent_gpu[1] <= GPU_ADDRESS_WITHIN_LINES else None
        event = classify_line(line, near_gpu)
        if event is None:
            continue
        notice = event.pop("notice")
        if event["kind"] in AER_KINDS:
            key = (event["kind"], event["device"])
            if notice:
                last_notice = (key, number)
            elif last_notice[0] == key and number - last_notice[1] <= AER_DETAIL_WITHIN_LINES:
                last_notice = (None, last_notice[1])
                continue
        counts[event["kind"]] += 1
        if counts[event["kind"]] > MAX_EVENTS_PER_KIND:
            not_recorded[event["kind"]] += 1
            continue
        events.append(event)
    return {"events": events, "counts": dict(sorted(counts.items())), "events_not_recorded": dict(sorted(not_recorded.items()))}
