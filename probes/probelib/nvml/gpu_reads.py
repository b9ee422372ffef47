"""What the load probe, gemm's power run and the measurement snapshots read through NVML: one sample row of a GPU, and
the fuller idle snapshot. Read only: nothing here sets clocks, power limits or persistence."""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from probelib.fields import is_unavailable, unavailable
from probelib.nvml.access import NvmlReader, failure_reason
from probelib.nvml.clock_event_reasons import describe_clock_event_reasons
from probelib.nvml.gpu_processes import collect_processes

# nvml.h enum values.
CLOCK_SM, CLOCK_MEM = 1, 2
TEMPERATURE_GPU = 0
REASON_FUNCTIONS = ["nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"]
POWER_LIMIT_FUNCTIONS = ["nvmlDeviceGetEnforcedPowerLimit", "nvmlDeviceGetPowerManagementLimit"]
COLUMNS = ["t_s", "sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "clock_event_reasons_mask", "gpu_util_pct"]


def milliwatts_to_w(value: Any) -> float:
    return round(float(value) / 1000.0, 1)


def utilization_gpu(rates: Any) -> int:
    return int(rates.gpu)


class GpuReads:
    """The reads of one GPU (its NVML handle); the reasons function that works is found once and reused."""

    def __init__(self, reader: NvmlReader, handle: Any) -> None:
        self.reader = reader
        self.handle = handle
        self.reasons_function: Optional[str] = None
        self.reasons_reason = ""
        for function in REASON_FUNCTIONS:
            ok, result = reader.attempt(function, handle)
            if ok:
                self.reasons_function = function
                break
            self.reasons_reason = (self.reasons_reason + "; " if self.reasons_reason else "") + failure_reason(result)

    def _call(self, function: str, *args: Any) -> Tuple[Any, Optional[str]]:
        ok, result = self.reader.attempt(function, self.handle, *args)
        return (result, None) if ok else (None, failure_reason(result))

    def sample(self) -> Tuple[List[Any], Dict[str, str]]:
        """[sm_clock_mhz, mem_clock_mhz, power_w, temperature_c, reasons_mask, gpu_util_pct] (None where a read failed)
        and {column: why} for the failed reads."""
        failures: Dict[str, str] = {}
        values: List[Any] = []
        calls = (("sm_clock_mhz", "nvmlDeviceGetClockInfo", (CLOCK_SM,), int),
                 ("mem_clock_mhz", "nvmlDeviceGetClockInfo", (CLOCK_MEM,), int),
                 ("power_w", "nvmlDeviceGetPowerUsage", (), milliwatts_to_w),
                 ("temperature_c", "nvmlDeviceGetTemperature", (TEMPERATURE_GPU,), int),
                 ("clock_event_reasons_mask", self.reasons_function, (), int),
                 ("gpu_util_pct", "nvmlDeviceGetUtilizationRates", (), utilization_gpu))
        for column, function, args, convert in calls:
            if function is None:
                values.append(None)
                failures[column] = self.reasons_reason or "no clock event reasons function"
                continue
            result, why = self._call(function, *args)
            if why is None:
                try:
                    result = convert(result)
                except (TypeError, ValueError, AttributeError) as exc:
                    result, why = None, "%s returned %r: %s" % (function, result, exc)
            values.append(result)
            if why is not None:
                failures[column] = why
        return values, failures

    def processes(self, own_pids: Sequence[int], proc_root: str = "/proc") -> Any:
        """[{pid, name, kind, used_memory_mib, own}] over compute and graphics; unavailable when neither list is read."""
        return flatten_processes(collect_processes(self.reader, self.handle, proc_root), own_pids)

    def snapshot(self, own_pids: Sequence[int], origin: float, clock: Any = time.monotonic) -> Dict[str, Any]:
        """The idle state: the sample's values with their names, the limits beside them, reasons decoded, processes."""
        taken = clock()
        values, failures = self.sample()
        names = COLUMNS[1:]
        snapshot: Dict[str, Any] = {"t_s": round(taken - origin, 3)}
        for name, value in zip(names, values):
            snapshot[name] = unavailable(failures[name]) if value is None else value
        mask = snapshot.pop("clock_event_reasons_mask")
        snapshot["clock_event_reasons"] = mask if is_unavailable(mask) else describe_clock_event_reasons(mask, self.reasons_function)
        rates = self.reader.value("nvmlDeviceGetUtilizationRates", self.handle)
        snapshot["memory_util_pct"] = rates if is_unavailable(rates) else int(rates.memory)
        snapshot["max_sm_clock_mhz"] = self.reader.value("nvmlDeviceGetMaxClockInfo", self.handle, CLOCK_SM)
        snapshot["max_mem_clock_mhz"] = self.reader.value("nvmlDeviceGetMaxClockInfo", self.handle, CLOCK_MEM)
        limit, unused_function = self.reader.first_value(POWER_LIMIT_FUNCTIONS, self.handle, convert=milliwatts_to_w)
        snapshot["power_limit_w"] = limit
        snapshot["processes"] = self.processes(own_pids)
        return snapshot


def flatten_processes(listed: Dict[str, Any], own_pids: Sequence[int]) -> Any:
    entries: List[Dict[str, Any]] = []
    reasons = []
    for kind in ("compute", "graphics"):
        found = listed.get(kind)
        if isinstance(found, list):
            for entry in found:
                entries.append({"pid": entry["pid"], "name": entry["name"], "kind": kind,
                                "used_memory_mib": entry["used_memory_mib"], "own": entry["pid"] in own_pids})
        else:
            reasons.append("%s: %s" % (kind, found["unavailable"] if is_unavailable(found) else found))
    if len(reasons) == 2:
        return unavailable("NVML could not list the processes (%s)" % "; ".join(reasons))
    return entries


def match_handles(session: Any, uuids: Sequence[Any]) -> List[Tuple[Any, Any]]:
    """For each torch UUID: (NVML handle, NVML index), or (None, unavailable reason)."""
    by_uuid: Dict[str, Tuple[Any, int]] = {}
    for index, handle in enumerate(session.handles):
        if handle is None:
            continue
        ok, uuid = session.reader.attempt("nvmlDeviceGetUUID", handle)
        if ok:
            by_uuid[str(uuid)] = (handle, index)
    matched: List[Tuple[Any, Any]] = []
    for uuid in uuids:
        if isinstance(uuid, str) and uuid in by_uuid:
            matched.append(by_uuid[uuid])
        else:
            matched.append((None, unavailable("no NVML device has the UUID %r that torch reported" % (uuid,))))
    return matched
