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


# nvml.h field ids of the clock-event duration counters and the perf policies that count the same time.
SW_POWER_CAP, SYNC_BOOST, SW_THERMAL, HW_THERMAL, HW_POWER_BRAKE = 74, 76, 269, 270, 271
POLICY_FIELDS = {0: (SW_POWER_CAP,), 1: (SW_THERMAL, HW_THERMAL), 2: (SYNC_BOOST,), 3: (), 4: (), 5: ()}
REFERENCE_TIME_US = 1764790000000000


def field_value(field_id, value, code=0, value_type=3):
    """One c_nvmlFieldValue_t as nvidia-ml-py returns it: the value sits in the union member of its type."""
    return SimpleNamespace(fieldId=field_id, scopeId=0, timestamp=0, latencyUsec=0, valueType=value_type, nvmlReturn=code,
                           value=SimpleNamespace(dVal=float(value), uiVal=value, ulVal=value, ullVal=value, sllVal=value,
                                                 siVal=value, usVal=value))


class CounterModule(FakeModule):
    """A newer nvidia-ml-py and driver: the clock-event duration field values and nvmlDeviceGetViolationStatus. ``counters``
    {handle: {field id: ns}}; fields in ``unsupported_fields`` answer NOT_SUPPORTED (an older driver); ``violations``
    False: nvmlDeviceGetViolationStatus is not supported either."""

    def __init__(self, count=2, counters=None, unsupported_fields=(), violations=True):
        super().__init__(count)
        self.counters = {"handle%d" % index: {} for index in range(count)}
        for handle, values in (counters or {}).items():
            self.counters[handle].update(values)
        self.unsupported_fields = set(unsupported_fields)
        self.violations = violations

    def counter(self, handle, field_id):
        return self.counters[handle].get(field_id, 0)

    def nvmlDeviceGetFieldValues(self, handle, field_ids):
        return [field_value(field_id, 0, code=3) if field_id in self.unsupported_fields else
                field_value(field_id, self.counter(handle, field_id)) for field_id in field_ids]

    def nvmlDeviceGetViolationStatus(self, handle, policy):
        if not self.violations:
            raise NVMLError(3, "Not Supported")
        return SimpleNamespace(referenceTime=REFERENCE_TIME_US,
                               violationTime=sum(self.counter(handle, field_id) for field_id in POLICY_FIELDS[policy]))


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
