"""memtest's NVML reads before and after (the health probe's ECC and remapped-row reads, shared in probelib.nvml) and what
rose in between: each count that grew, each flag that became true, each counter not read with why."""
from types import SimpleNamespace

from fake_pynvml import NVMLError

from probe_packages.memtest.counters import CPU_HAS_NONE, CounterReads, changes
from probelib.nvml.access import NvmlSession

GPU0, GPU1 = "GPU-aaaaaaaa-0000", "GPU-bbbbbbbb-1111"


class FakeNvml:
    """Two GPUs whose counters a test sets: ecc[(handle, error_type, counter_type)], rows[handle]; GPU 1 has no
    aggregate counters and no remapped rows (Not Supported)."""

    def __init__(self):
        self.ecc = {(handle, error, counter): 0 for handle in ("h0", "h1") for error in (0, 1) for counter in (0, 1)}
        self.rows = {"h0": (0, 0, 0, 0)}

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, index):
        return "h%d" % index

    def nvmlDeviceGetUUID(self, handle):
        return {"h0": GPU0, "h1": GPU1}[handle].encode()

    def nvmlDeviceGetEccMode(self, handle):
        return (1, 1)

    def nvmlDeviceGetTotalEccErrors(self, handle, error_type, counter_type):
        if handle == "h1" and counter_type == 1:
            raise NVMLError(3, "Not Supported")
        return self.ecc[(handle, error_type, counter_type)]

    def nvmlDeviceGetRemappedRows(self, handle):
        if handle not in self.rows:
            raise NVMLError(3, "Not Supported")
        return self.rows[handle]

    def nvmlDeviceGetMemoryInfo(self, handle):
        return SimpleNamespace(total=144 << 30, used=1 << 30, free=143 << 30)


DEVICES = [{"kind": "cuda", "index": 0, "uuid": GPU0}, {"kind": "cuda", "index": 1, "uuid": GPU1}]


def reads(nvml):
    return CounterReads(DEVICES, NvmlSession().open(importer=lambda: nvml))


def test_what_rose_between_the_reads_is_named_with_before_and_after():
    nvml = FakeNvml()
    counters = reads(nvml)
    assert counters.free_bytes(DEVICES[0]) == 143 << 30
    before = [counters.counters(device) for device in DEVICES]
    nvml.ecc[("h0", 1, 0)] = 2  # volatile uncorrected
    nvml.ecc[("h0", 0, 1)] = 7  # aggregate corrected
    nvml.rows["h0"] = (0, 1, 1, 0)  # a row remapped for an uncorrectable error, the remap pending
    after = [counters.counters(device) for device in DEVICES]
    first = changes(before[0], after[0])
    assert first["rose"] == [
        {"counter": "ecc.volatile_uncorrected_count", "before": 0, "after": 2, "increase": 2},
        {"counter": "ecc.aggregate_corrected_count", "before": 0, "after": 7, "increase": 7},
        {"counter": "remapped_rows.uncorrectable_count", "before": 0, "after": 1, "increase": 1},
        {"counter": "remapped_rows.pending", "before": False, "after": True, "increase": 1}]
    assert len(first["compared"]) == 8 and first["unread"] == {}
    second = changes(before[1], after[1])
    assert second["rose"] == [] and second["compared"] == ["ecc.volatile_corrected_count", "ecc.volatile_uncorrected_count"]
    assert set(second["unread"]) == {"ecc.aggregate_corrected_count", "ecc.aggregate_uncorrected_count",
                                     "remapped_rows.correctable_count", "remapped_rows.uncorrectable_count",
                                     "remapped_rows.pending", "remapped_rows.failure"}
    assert all("not supported by this GPU" in why for why in second["unread"].values())


def test_a_count_that_fell_or_a_flag_that_cleared_is_no_rise():
    before = {"ecc": {"volatile_corrected_count": 5}, "remapped_rows": {"correctable_count": 1, "uncorrectable_count": 0,
                                                                        "pending": True, "failure": False}}
    after = {"ecc": {"volatile_corrected_count": 0}, "remapped_rows": {"correctable_count": 1, "uncorrectable_count": 0,
                                                                       "pending": False, "failure": False}}
    assert changes(before, after)["rose"] == []


def test_a_gpu_nvml_does_not_list_and_the_cpu_have_their_reasons():
    stranger = {"kind": "cuda", "index": 2, "uuid": "GPU-cccccccc"}
    counters = CounterReads(DEVICES + [stranger], NvmlSession().open(importer=FakeNvml))
    assert counters.counters(stranger)["ecc"] == {"unavailable": "no NVML device has the UUID 'GPU-cccccccc' that torch reported"}
    cpu = CounterReads([{"kind": "cpu", "index": 0}])
    assert cpu.session is None
    assert cpu.counters({"kind": "cpu", "index": 0}) == {"ecc": {"unavailable": CPU_HAS_NONE},
                                                         "remapped_rows": {"unavailable": CPU_HAS_NONE}}
    assert cpu.free_bytes({"kind": "cpu", "index": 0}) == {"unavailable": CPU_HAS_NONE}


def test_without_nvml_every_counter_says_why():
    def missing():
        raise ImportError("No module named 'pynvml'")

    counters = CounterReads(DEVICES, NvmlSession().open(importer=missing))
    read = counters.counters(DEVICES[0])
    assert "nvidia-ml-py is not installed" in read["ecc"]["unavailable"]
    assert "nvidia-ml-py is not installed" in counters.free_bytes(DEVICES[0])["unavailable"]
    assert changes(read, read)["compared"] == []
