"""An NVML stand-in for the load probe's tests: 2 GPUs whose clocks, power and temperature follow a 'busy' flag the
fake torch sets, this process listed on both, and one stranger (pid 4242) on the second."""
import os
from types import SimpleNamespace

import fake_pynvml

IDLE = {"sm": 345, "mem": 1593, "power_mw": 75000, "temperature": 30, "mask": 0x1, "util": 0}
BUSY = {"sm": 1755, "mem": 2619, "power_mw": 698000, "temperature": 55, "mask": 0x4, "util": 100}
STRANGER = 4242


class LoadModule(fake_pynvml.FakeModule):
    """Handles 'handle0' and 'handle1', UUIDs GPU-0000-0 and GPU-0000-1 (as the fake torch reports them)."""

    def __init__(self, count=2, event_reasons=True):
        super().__init__(count)
        self.busy = set()
        self.calls = 0
        if event_reasons:
            self.nvmlDeviceGetCurrentClocksEventReasons = self._reasons

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
