"""A stand-in for an old nvidia-ml-py on a 2-GPU host: few functions, NVML errors with codes."""
from types import SimpleNamespace


class NVMLError(Exception):
    def __init__(self, value, text):
        super().__init__(text)
        self.value = value


def not_supported(*_args):
    raise NVMLError(3, "Not Supported")


def library_not_found():
    raise NVMLError(12, "NVML Shared Library Not Found")


class FakeModule:
    NVML_NVLINK_MAX_LINKS = 4

    def __init__(self, count=2):
        self.count = count
        self.shut_down = False

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut_down = True

    def nvmlDeviceGetCount(self):
        return self.count

    def nvmlDeviceGetHandleByIndex(self, index):
        return "handle%d" % index

    def nvmlSystemGetDriverVersion(self):
        return b"550.54.15"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12040

    def nvmlDeviceGetName(self, handle):
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetPciInfo(self, handle):
        bus = {"handle0": b"00000000:1B:00.0", "handle1": b"00000000:43:00.0"}[handle]
        return SimpleNamespace(busId=bus, pciDeviceId=0x233010DE, pciSubSystemId=0x16C110DE)

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(total=81559 << 20, used=512 << 20, free=81047 << 20)

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return 0x4

    nvmlDeviceGetRetiredPages = staticmethod(not_supported)
    nvmlDeviceGetRetiredPagesPendingStatus = staticmethod(not_supported)

    def nvmlDeviceGetRemappedRows(self, handle):
        return (0, 1, 1, 0)

    def nvmlDeviceGetEccMode(self, handle):
        return [1, 0]

    def nvmlDeviceGetPowerUsage(self, handle):
        return 71234

    def nvmlDeviceGetTopologyCommonAncestor(self, first, second):
        return 40

    def nvmlDeviceGetP2PStatus(self, first, second, index):
        return 0 if index != 3 else 5

    def nvmlDeviceGetNvLinkState(self, handle, link):
        if link >= 2:
            raise NVMLError(2, "Invalid Argument")
        return 1

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle, link):
        other = {"handle0": b"00000000:43:00.0", "handle1": b"00000000:1B:00.0"}[handle]
        return SimpleNamespace(busId=other)

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle, link):
        return 0

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return [SimpleNamespace(pid=999999999, usedGpuMemory=1 << 30)] if handle == "handle0" else []

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle):
        return []


class FirmwareModule(FakeModule):
    """A current nvidia-ml-py: the firmware reads answer, GPU 1 on another VBIOS; InfoROM POWER is Not Supported (as the
    H200 nvidia-smi -q sample in tests/unit/tools/test_compare_health_with_smi.py: OEM 2.1, ECC 7.16, power N/A)."""

    def nvmlDeviceGetVbiosVersion(self, handle):
        return {"handle0": "96.00.A5.00.1A", "handle1": "96.00.74.00.01"}[handle]

    def nvmlDeviceGetInforomImageVersion(self, handle):
        return "G520.0282.02.02"

    def nvmlDeviceGetGspFirmwareVersion(self, handle):
        return b"580.159.04"

    def nvmlDeviceGetGspFirmwareMode(self, handle):
        return [1, 1]

    def nvmlDeviceGetInforomVersion(self, handle, infoRomObject):
        if infoRomObject == 2:
            raise NVMLError(3, "Not Supported")
        return {0: "2.1", 1: "7.16"}[infoRomObject]
