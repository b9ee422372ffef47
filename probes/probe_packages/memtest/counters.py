"""The GPUs' memory error counters (NVML ECC counts and remapped rows, as the health probe reads them) and free memory,
read by the probe before its workers start and after they end, and what rose in between."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from probelib.fields import is_number, is_unavailable, unavailable
from probelib.nvml.access import NvmlSession
from probelib.nvml.gpu_reads import match_handles
from probelib.nvml.memory_errors import read_ecc, read_remapped_rows

ECC_COUNTS = ("volatile_corrected_count", "volatile_uncorrected_count", "aggregate_corrected_count",
              "aggregate_uncorrected_count")
ROW_COUNTS = ("correctable_count", "uncorrectable_count")
ROW_FLAGS = ("pending", "failure")
CPU_HAS_NONE = "the CPU path has no NVML memory error counters"


class CounterReads:
    """NVML opened once for the probe, each measured GPU matched to its handle by UUID."""

    def __init__(self, devices: Sequence[Dict[str, Any]], session: Optional[NvmlSession] = None) -> None:
        self.devices = list(devices)
        self.session: Optional[NvmlSession] = None
        self.handles: Dict[int, Tuple[Any, Any]] = {}
        self.reason = CPU_HAS_NONE
        if any(device["kind"] == "cuda" for device in self.devices):
            self.session = session if session is not None else NvmlSession().open()
            self.reason = self.session.reason or "NVML lists no GPU"
            if self.session.usable:
                matched = match_handles(self.session, [device.get("uuid") for device in self.devices])
                self.handles = {int(device["index"]): pair for device, pair in zip(self.devices, matched)}

    def _handle(self, device: Dict[str, Any]) -> Tuple[Any, str]:
        if device["kind"] != "cuda":
            return None, CPU_HAS_NONE
        handle, where = self.handles.get(int(device["index"]), (None, unavailable(self.reason)))
        return (handle, "") if handle is not None else (None, where["unavailable"])

    def counters(self, device: Dict[str, Any]) -> Dict[str, Any]:
        """{"ecc": ..., "remapped_rows": ...} of one device, each unavailable with the reason where it cannot be read."""
        handle, why = self._handle(device)
        if handle is None:
            return {"ecc": unavailable(why), "remapped_rows": unavailable(why)}
        reader = self.session.reader
        return {"ecc": read_ecc(reader, handle), "remapped_rows": read_remapped_rows(reader, handle)}

    def free_bytes(self, device: Dict[str, Any]) -> Any:
        """NVML's free memory of a GPU in bytes (before the workers start), or unavailable."""
        handle, why = self._handle(device)
        if handle is None:
            return unavailable(why)
        return self.session.reader.value("nvmlDeviceGetMemoryInfo", handle, convert=lambda memory: int(memory.free))

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


def counter_values(counters: Dict[str, Any]) -> Dict[str, Any]:
    """{"ecc.<count>" | "remapped_rows.<count or flag>": value or unavailable} of one read."""
    values: Dict[str, Any] = {}
    for section, names in (("ecc", ECC_COUNTS), ("remapped_rows", ROW_COUNTS + ROW_FLAGS)):
        found = counters.get(section)
        for name in names:
            values["%s.%s" % (section, name)] = found if is_unavailable(found) else found.get(name, unavailable("not read"))
    return values


def changes(before: Dict[str, Any], after: Dict[str, Any]) -> Dict[str, Any]:
    """What rose between two reads: each count that grew (before, after, increase), each flag that became true; the
    counters compared; and those not compared, with why."""
    first, second = counter_values(before), counter_values(after)
    rose: List[Dict[str, Any]] = []
    compared: List[str] = []
    unread: Dict[str, str] = {}
    for name in first:
        old, new = first[name], second[name]
        for value in (old, new):
            if is_unavailable(value):
                unread.setdefault(name, value["unavailable"])
        if name in unread:
            continue
        compared.append(name)
        if isinstance(old, bool) or isinstance(new, bool):
            if new and not old:
                rose.append({"counter": name, "before": bool(old), "after": bool(new), "increase": 1})
        elif is_number(old) and is_number(new) and new > old:
            rose.append({"counter": name, "before": old, "after": new, "increase": new - old})
    return {"rose": rose, "compared": compared, "unread": unread}
