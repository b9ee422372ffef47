"""A stand-in for an old nvidia-ml-py on a 2-GPU host: few functions, NVML errors with codes."""
import ctypes
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


class c_nvmlGpuFabricInfo_t(ctypes.Structure):  # pylint: disable=invalid-name
    """nvml.h's layout: the probe passes it by reference, as to the real library."""
    _fields_ = [("clusterUuid", ctypes.c_uint8 * 16), ("status", ctypes.c_uint), ("cliqueId", ctypes.c_uint32),
                ("state", ctypes.c_uint)]


class c_nvmlGpuFabricInfoV_t(ctypes.Structure):  # pylint: disable=invalid-name
    _fields_ = [("version", ctypes.c_uint), ("clusterUuid", ctypes.c_uint8 * 16), ("status", ctypes.c_uint),
                ("cliqueId", ctypes.c_uint32), ("state", ctypes.c_uint), ("healthMask", ctypes.c_uint32)]


def filled(reference, state, status=0, clique=7, cluster=bytes(range(1, 17)), health_mask=None):
    """Write into the structure a byref() points at, as NVML does."""
    info = reference._obj  # pylint: disable=protected-access
    info.state, info.status, info.cliqueId = state, status, clique
    for position, byte in enumerate(cluster):
        info.clusterUuid[position] = byte
    if health_mask is not None:
        info.healthMask = health_mask
    return 0


class NvlinkFabricModule(FakeModule):
    """A newer nvidia-ml-py on an NVSwitch host: NVLink error counters per link and the GPU fabric info.

    counts: {(handle, link, counter): n}, others 0; ecc_data (counter 4) is Not Supported, as on Hopper.
    fabric: (state, status) every GPU reports; health_mask: the versioned call's (0x2A: bandwidth not degraded, no route
    recovery, routes healthy, the other fields not reported)."""

    c_nvmlGpuFabricInfo_t = c_nvmlGpuFabricInfo_t
    c_nvmlGpuFabricInfoV_t = c_nvmlGpuFabricInfoV_t

    def __init__(self, count=2, counts=None, fabric=(3, 0), health_mask=0x2A):
        super().__init__(count)
        self.counts = counts or {}
        self.fabric = fabric
        self.health_mask = health_mask

    def nvmlDeviceGetNvLinkErrorCounter(self, handle, link, counter):
        if counter == 4:
            raise NVMLError(3, "Not Supported")
        return self.counts.get((handle, link, counter), 0)

    def nvmlDeviceGetGpuFabricInfoV(self, handle, reference):
        return filled(reference, self.fabric[0], self.fabric[1], health_mask=self.health_mask)

    def nvmlDeviceGetGpuFabricInfo(self, handle, reference):
        return filled(reference, self.fabric[0], self.fabric[1])
