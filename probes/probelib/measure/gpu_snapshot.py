"""Clocks, power, temperature, throttle reasons and other processes of one GPU at one instant (through NVML)."""
from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional

from probelib.fields import unavailable
from probelib.nvml.access import NvmlSession
from probelib.nvml.clock_event_reasons import describe_clock_event_reasons
from probelib.nvml.gpu_processes import collect_processes
from probelib.nvml.gpu_reads import GpuReads

_NVML_CLOCK_SM, _NVML_CLOCK_MEM = 1, 2


class GpuSnapshots:
    """One NVML session for the whole probe; ``take(uuid)`` reads the GPU whose UUID torch reported."""

    def __init__(self) -> None:
        self.session = NvmlSession().open()
        self.by_uuid: Dict[str, Any] = {}
        if self.session.usable:
            for handle in self.session.handles:
                if handle is None:
                    continue
                ok, uuid = self.session.reader.attempt("nvmlDeviceGetUUID", handle)
                if ok:
                    self.by_uuid[str(uuid)] = handle

    def take(self, uuid: Any) -> Dict[str, Any]:
        if not self.session.usable:
            return unavailable(self.session.reason or "NVML is not usable")
        handle: Optional[Any] = self.by_uuid.get(uuid) if isinstance(uuid, str) else None
        if handle is None:
            return unavailable("no NVML device has the UUID %r that torch reported" % (uuid,))
        reader = self.session.reader
        mask, method = reader.first_value(["nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"],
                                          handle)
        processes = collect_processes(reader, handle)
        own = os.getpid()
        listed = [entries for entries in processes.values() if isinstance(entries, list)]
        others = [entry for entries in listed for entry in entries if isinstance(entry, dict) and entry.get("pid") != own]
        if not listed:
            others = processes.get("compute")
        return {
            "time_unix_s": round(time.time(), 3),
            "sm_clock_mhz": reader.value("nvmlDeviceGetClockInfo", handle, _NVML_CLOCK_SM),
            "memory_clock_mhz": reader.value("nvmlDeviceGetClockInfo", handle, _NVML_CLOCK_MEM),
            "power_draw_w": reader.value("nvmlDeviceGetPowerUsage", handle, convert=lambda milliwatts: milliwatts / 1000.0),
            "temperature_c": reader.value("nvmlDeviceGetTemperature", handle, 0),
            "clock_event_reasons": describe_clock_event_reasons(mask, method) if isinstance(mask, int) else mask,
            "other_processes": others,
        }

    def reads(self, uuid: Any) -> Any:
        """The load sampler's NVML reads of the GPU whose UUID torch reported, or None."""
        handle = self.by_uuid.get(uuid) if isinstance(uuid, str) and self.session.usable else None
        return GpuReads(self.session.reader, handle) if handle is not None else None

    def close(self) -> None:
        self.session.close()
