"""NVLink error counters and the GPU fabric info read through a fake NVML: every return path, and the schema."""
from functools import partial

import pytest

import fake_pynvml
from probelib.nvml.access import NvmlReader, NvmlSession
from probelib.nvml.gpu_fabric import cluster_uuid, read_gpu_fabric
from probelib.nvml.nvlink import read_nvlinks
from probelib.nvml.nvlink_errors import read_nvlink_errors
from probelib.system.roots import SystemRoots
import health

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

_validator = partial(schema_validator, "health.schema.json")
REPLAY, RECOVERY, CRC_FLIT, CRC_DATA = 0, 1, 2, 3


def errors_of(module, handle="handle0"):
    reader = NvmlReader(module)
    return read_nvlink_errors(reader, handle, read_nvlinks(reader, handle))


def test_counters_per_supported_link_with_totals():
    module = fake_pynvml.NvlinkFabricModule(counts={("handle0", 1, REPLAY): 3, ("handle0", 0, CRC_FLIT): 40,
                                                    ("handle0", 1, CRC_FLIT): 2, ("handle0", 1, CRC_DATA): 1})
    found = errors_of(module)
    not_supported = {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
    assert found["links"] == [
        {"link": 0, "state": "active", "replay": 0, "recovery": 0, "crc_flit": 40, "crc_data": 0, "ecc_data": not_supported},
        {"link": 1, "state": "active", "replay": 3, "recovery": 0, "crc_flit": 2, "crc_data": 1, "ecc_data": not_supported}]
    totals = found["totals"]
    assert (totals["replay"], totals["recovery"], totals["crc_flit"], totals["crc_data"], totals["links_counted"]) == (3, 0, 42, 1, 2)
    assert totals["ecc_data"] == {"unavailable": "no link gave a ecc_data count (link 0: not supported by this GPU "
                                                 "(NVML: Not Supported))"}


class NoNvlink(fake_pynvml.NvlinkFabricModule):
    def nvmlDeviceGetNvLinkState(self, handle, link):
        raise fake_pynvml.NVMLError(3, "Not Supported")


def test_a_gpu_without_nvlink_says_so_instead_of_zeros():
    found = errors_of(NoNvlink())
    assert found == {"unavailable": "no NVLink error counters: NVML supports no NVLink on this GPU (not supported for any of "
                                    "the 4 link indices asked: a PCIe card, or a VM slice whose NVLinks are not passed through)"}


def test_an_unreadable_nvlink_state_is_named():
    reader = NvmlReader(fake_pynvml.NvlinkFabricModule())
    found = read_nvlink_errors(reader, "handle0", {"unavailable": "the GPU is lost"})
    assert found == {"unavailable": "no NVLink error counters: the NVLink state could not be read (the GPU is lost)"}


def test_an_old_nvidia_ml_py_without_the_function():
    assert errors_of(fake_pynvml.FakeModule()) == {
        "unavailable": "this nvidia-ml-py lacks nvmlDeviceGetNvLinkErrorCounter: upgrade nvidia-ml-py to read NVLink error counters"}


class DriverLacksCounters(fake_pynvml.NvlinkFabricModule):
    def nvmlDeviceGetNvLinkErrorCounter(self, handle, link, counter):
        raise fake_pynvml.NVMLError(13, "Function Not Found")


def test_a_driver_whose_nvml_lacks_the_function_gives_one_reason():
    assert errors_of(DriverLacksCounters()) == {
        "unavailable": "the installed driver's NVML lacks nvmlDeviceGetNvLinkErrorCounter, so no NVLink error counter can be read"}


class LinkOneLost(fake_pynvml.NvlinkFabricModule):
    def nvmlDeviceGetNvLinkErrorCounter(self, handle, link, counter):
        if link == 1:
            raise fake_pynvml.NVMLError(15, "GPU is lost")
        return super().nvmlDeviceGetNvLinkErrorCounter(handle, link, counter)


def test_a_failing_link_is_unavailable_alone_and_left_out_of_the_totals():
    found = errors_of(LinkOneLost(counts={("handle0", 0, REPLAY): 5}))
    assert found["links"][1]["replay"] == {"unavailable": "the GPU is lost (fell off the bus); reset or reboot it (NVML: GPU is lost)"}
    assert found["totals"]["replay"] == 5 and found["totals"]["links_counted"] == 2


def test_fabric_completed_through_the_versioned_call():
    found = read_gpu_fabric(NvmlReader(fake_pynvml.NvlinkFabricModule()), "handle0")
    assert found == {"state": "completed", "state_code": 3, "status": "success", "status_code": 0, "clique_id": 7,
                     "cluster_uuid": "01020304-0506-0708-090a-0b0c0d0e0f10", "function": "nvmlDeviceGetGpuFabricInfoV",
                     "health_mask": 0x2A,
                     "health": {"degraded_bandwidth": "no", "route_recovery_in_progress": "no", "route_unhealthy": "no",
                                "access_timeout_recovery_in_progress": "not_supported", "incorrect_configuration": "not_supported",
                                "partition_assigned": "not_supported", "gfm_state": "not_supported"}}


def test_the_fabric_health_mask_in_words():
    mask = 0x1 | (5 << 8) | (2 << 14)
    health = read_gpu_fabric(NvmlReader(fake_pynvml.NvlinkFabricModule(health_mask=mask)), "handle0")["health"]
    assert (health["degraded_bandwidth"], health["incorrect_configuration"], health["gfm_state"]) == (
        "yes", "insufficient_nvlinks", "disconnected")


def test_fabric_in_progress_and_a_failed_registration():
    assert read_gpu_fabric(NvmlReader(fake_pynvml.NvlinkFabricModule(fabric=(2, 0))), "h")["state"] == "in_progress"
    failed = read_gpu_fabric(NvmlReader(fake_pynvml.NvlinkFabricModule(fabric=(3, 10))), "h")
    assert (failed["state"], failed["status"], failed["status_code"]) == ("completed", "timeout", 10)


class WithoutVersioned(fake_pynvml.NvlinkFabricModule):
    nvmlDeviceGetGpuFabricInfoV = None


def test_fabric_falls_back_to_the_unversioned_call_of_an_older_nvidia_ml_py():
    found = read_gpu_fabric(NvmlReader(WithoutVersioned(fabric=(1, 0))), "handle0")
    assert found["state"] == "not_started" and found["function"] == "nvmlDeviceGetGpuFabricInfo"
    assert "health_mask" not in found


def test_fabric_functions_missing_altogether():
    assert read_gpu_fabric(NvmlReader(fake_pynvml.FakeModule()), "handle0") == {
        "unavailable": "the GPU fabric info could not be read: this nvidia-ml-py lacks nvmlDeviceGetGpuFabricInfoV; "
                       "this nvidia-ml-py lacks nvmlDeviceGetGpuFabricInfo"}


class FabricNotSupported(fake_pynvml.NvlinkFabricModule):
    def nvmlDeviceGetGpuFabricInfoV(self, handle, reference):
        raise fake_pynvml.NVMLError(3, "Not Supported")


def test_fabric_not_supported_is_a_state_with_its_reason():
    found = read_gpu_fabric(NvmlReader(FabricNotSupported()), "handle0")
    assert found["state"] == "not_supported" and found["function"] == "nvmlDeviceGetGpuFabricInfoV"
    assert found["reason"].startswith("NVML answers Not Supported to nvmlDeviceGetGpuFabricInfoV")
    reported = read_gpu_fabric(NvmlReader(fake_pynvml.NvlinkFabricModule(fabric=(0, 0))), "handle0")
    assert reported["state"] == "not_supported" and "not part of an NVSwitch fabric" in reported["reason"]


class FabricVersionMismatch(fake_pynvml.NvlinkFabricModule):
    def nvmlDeviceGetGpuFabricInfoV(self, handle, reference):
        raise fake_pynvml.NVMLError(25, "Argument Version Mismatch")

    def nvmlDeviceGetGpuFabricInfo(self, handle, reference):
        raise fake_pynvml.NVMLError(4, "Insufficient Permissions")


def test_fabric_errors_are_unavailable_with_each_call_named():
    found = read_gpu_fabric(NvmlReader(FabricVersionMismatch()), "handle0")
    assert found == {"unavailable": "the GPU fabric info could not be read: nvmlDeviceGetGpuFabricInfoV: NVML call failed "
                                    "(NVML: Argument Version Mismatch); nvmlDeviceGetGpuFabricInfo: not permitted for this user "
                                    "(NVML: Insufficient Permissions)"}


def test_cluster_uuid_words():
    assert cluster_uuid(bytes(16)) == "00000000-0000-0000-0000-000000000000"


def _collect(tmp_path, module):
    session = NvmlSession().open(importer=lambda: module)
    roots = SystemRoots(proc=str(tmp_path), sys=str(tmp_path), dev=str(tmp_path), etc=str(tmp_path),
                        root=str(tmp_path), var_log=str(tmp_path))
    result = health.collect({"cuda_init": False, "kernel_log_lines": 10, "device_open_test": False,
                             "cuda_init_timeout_s": 1}, roots=roots, nvml=session)
    assert result.status == "ok", result.reason
    return result.data


def test_the_health_probe_records_both_and_matches_the_schema(tmp_path):
    data = _collect(tmp_path, fake_pynvml.NvlinkFabricModule(counts={("handle1", 0, RECOVERY): 2}))
    _validator().validate(data)
    second = data["gpus"][1]
    assert second["nvlink_errors"]["totals"]["recovery"] == 2
    assert second["fabric"]["state"] == "completed" and second["fabric"]["clique_id"] == 7


def test_the_schema_takes_every_unavailable_and_not_supported_shape(tmp_path):
    for module in (NoNvlink(), fake_pynvml.FakeModule(), FabricNotSupported(), FabricVersionMismatch(),
                   fake_pynvml.NvlinkFabricModule(fabric=(0, 0)), fake_pynvml.NvlinkFabricModule(health_mask=0xFFFFFFFF)):
        _validator().validate(_collect(tmp_path, module))


def test_the_real_nvidia_ml_py_structures_are_read_the_same_way(monkeypatch):
    """nvidia-ml-py's own structures and enum values, its library call replaced: the names the probe reads exist."""
    pynvml = pytest.importorskip("pynvml")
    assert (pynvml.NVML_NVLINK_ERROR_DL_REPLAY, pynvml.NVML_NVLINK_ERROR_DL_RECOVERY, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT,
            pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA, pynvml.NVML_NVLINK_ERROR_DL_ECC_DATA) == (0, 1, 2, 3, 4)
    assert (pynvml.NVML_GPU_FABRIC_STATE_NOT_SUPPORTED, pynvml.NVML_GPU_FABRIC_STATE_NOT_STARTED,
            pynvml.NVML_GPU_FABRIC_STATE_IN_PROGRESS, pynvml.NVML_GPU_FABRIC_STATE_COMPLETED) == (0, 1, 2, 3)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetGpuFabricInfoV",
                        lambda handle, reference: fake_pynvml.filled(reference, 2, 0, clique=3, health_mask=5))
    found = read_gpu_fabric(NvmlReader(pynvml), "handle0")
    assert (found["state"], found["clique_id"], found["health_mask"]) == ("in_progress", 3, 5)
    assert found["cluster_uuid"] == "01020304-0506-0708-090a-0b0c0d0e0f10"
