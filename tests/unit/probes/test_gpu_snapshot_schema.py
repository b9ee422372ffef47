"""What GpuSnapshots.take writes is what common.schema.json's gpu_state says: gemm, hostbw and membw record it."""
from types import SimpleNamespace

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import load_schema, schema_problems
import fake_pynvml
from probelib.measure import gpu_snapshot
from probelib.nvml.access import NvmlSession

UUIDS = {"handle0": "GPU-6b6bb8c4-1c4f-7a3e-9d2a-000000000001", "handle1": "GPU-6b6bb8c4-1c4f-7a3e-9d2a-000000000002"}


class SnapshotModule(fake_pynvml.FakeModule):
    """The old nvidia-ml-py of fake_pynvml, with what a snapshot reads besides."""

    def nvmlDeviceGetUUID(self, handle):
        return UUIDS[handle].encode()

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return {1: 1980, 2: 3201}[clock]

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return 41

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle):
        return [SimpleNamespace(pid=1, usedGpuMemory=None)]


def _gpu_state():
    common = load_schema("common.schema.json")
    return {"$schema": common["$schema"], "$ref": "common.schema.json#/$defs/gpu_state"}


def _snapshots(monkeypatch, module):
    class Session(NvmlSession):
        def open(self, importer=None, proc_root="/proc"):
            return super().open(importer=lambda: module, proc_root=proc_root)

    monkeypatch.setattr(gpu_snapshot, "NvmlSession", Session)
    return gpu_snapshot.GpuSnapshots()


def test_a_snapshot_is_a_gpu_state(monkeypatch):
    snapshots = _snapshots(monkeypatch, SnapshotModule())
    state = snapshots.take(UUIDS["handle0"])
    assert state["sm_clock_mhz"] == 1980 and state["clock_event_reasons"]["method"] == "nvmlDeviceGetCurrentClocksThrottleReasons"
    assert [process["pid"] for process in state["other_processes"]] == [999999999, 1]
    assert schema_problems(state, _gpu_state(), "gpu_state") == []


@pytest.mark.parametrize("edit", [
    lambda state: state.update(temperature_c=41.5),
    lambda state: state["clock_event_reasons"].update(mask_hex="0x4"),
    lambda state: state["clock_event_reasons"].update(method="nvidia-smi"),
    lambda state: state["other_processes"][0].update(kind="compute"),
    lambda state: state.update(time_unix_s=0),
])
def test_a_gpu_state_is_no_more_than_the_snapshot_writes(monkeypatch, edit):
    state = _snapshots(monkeypatch, SnapshotModule()).take(UUIDS["handle0"])
    edit(state)
    assert schema_problems(state, _gpu_state(), "gpu_state")


def test_what_the_snapshot_could_not_read_is_a_gpu_state_too(monkeypatch):
    old = _snapshots(monkeypatch, fake_pynvml.FakeModule())  # no nvmlDeviceGetUUID: no GPU is matched
    assert list(old.take(UUIDS["handle0"])) == ["unavailable"]
    assert schema_problems(old.take(UUIDS["handle0"]), _gpu_state(), "gpu_state") == []
    module = SnapshotModule()
    module.nvmlDeviceGetTemperature = fake_pynvml.not_supported
    module.nvmlDeviceGetCurrentClocksThrottleReasons = fake_pynvml.not_supported
    module.nvmlDeviceGetComputeRunningProcesses = fake_pynvml.not_supported
    module.nvmlDeviceGetGraphicsRunningProcesses = fake_pynvml.not_supported
    state = _snapshots(monkeypatch, module).take(UUIDS["handle1"])
    assert state["temperature_c"] == {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
    assert "unavailable" in state["clock_event_reasons"] and "unavailable" in state["other_processes"]
    assert schema_problems(state, _gpu_state(), "gpu_state") == []
