"""An NVML stand-in for the load probe's tests: 2 GPUs whose clocks, power and temperature follow a 'busy' flag the
fake torch sets, this process listed on both, and one stranger (pid 4242) on the second. While busy, the clock-event
duration counters grow at ``busy_rates`` (ns per ns of wall time; by default sw_power_cap all the time)."""
import os
import time
from types import SimpleNamespace

import fake_pynvml

IDLE = {"sm": 345, "mem": 1593, "power_mw": 75000, "temperature": 30, "mask": 0x1, "util": 0}
BUSY = {"sm": 1755, "mem": 2619, "power_mw": 698000, "temperature": 55, "mask": 0x4, "util": 100}
STRANGER = 4242


class LoadModule(fake_pynvml.CounterModule):
    """Handles 'handle0' and 'handle1', UUIDs GPU-0000-0 and GPU-0000-1 (as the fake torch reports them)."""

    def __init__(self, count=2, event_reasons=True, busy_rates=None, **counters):
        super().__init__(count, **counters)
        self.busy = set()
        self.calls = 0
        self.busy_rates = {fake_pynvml.SW_POWER_CAP: 1.0} if busy_rates is None else busy_rates
        self.last_counted = {}
        if event_reasons:
            self.nvmlDeviceGetCurrentClocksEventReasons = self._reasons

    def counter(self, handle, field_id):
        now = time.monotonic()
        since = now - self.last_counted.get(handle, now)
        self.last_counted[handle] = now
        if int(handle[-1]) in self.busy:
            for busy_field, rate in self.busy_rates.items():
                self.counters[handle][busy_field] = self.counters[handle].get(busy_field, 0) + int(since * rate * 1e9)
        return super().counter(handle, field_id)

    def _state(self, handle):
        self.calls += 1
        return BUSY if int(handle[-1]) in self.busy else IDLE

    def nvmlDeviceGetUUID(self, handle):
        return b"GPU-0000-" + handle[-1].encode()

    def nvmlDeviceGetClockInfo(self, handle, kind):
        return self._state(handle)["sm" if kind == 1 else "mem"]

    def nvmlDeviceGetMaxClockInfo(self, handle, kind):
        return 1980 if kind == 1 else 3201

    def nvmlDeviceGetPowerUsage(self, handle):
        return self._state(handle)["power_mw"]

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 700000

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return self._state(handle)["temperature"]

    def _reasons(self, handle):
        return self._state(handle)["mask"]

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return self._state(handle)["mask"]

    def nvmlDeviceGetUtilizationRates(self, handle):
        util = self._state(handle)["util"]
        return SimpleNamespace(gpu=util, memory=util // 2)

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        listed = [SimpleNamespace(pid=os.getpid(), usedGpuMemory=512 << 20)]
        if handle == "handle1":
            listed.append(SimpleNamespace(pid=STRANGER, usedGpuMemory=1 << 30))
        return listed
