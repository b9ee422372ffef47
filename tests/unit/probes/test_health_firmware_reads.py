"""The health probe's firmware reads: GSP firmware version and mode, InfoROM image and per-object versions, through a
current nvidia-ml-py, one whose GPU answers Not Supported, and an old one that lacks the functions."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
import fake_pynvml
import health
from probelib.nvml.access import NvmlReader, NvmlSession
from probelib.nvml.firmware import read_firmware
from probelib.system.roots import SystemRoots

NOT_SUPPORTED = "not supported by this GPU (NVML: Not Supported)"


def _collect(module, tmp_path):
    session = NvmlSession().open(importer=lambda: module)
    roots = SystemRoots(proc=str(tmp_path), sys=str(tmp_path), dev=str(tmp_path), etc=str(tmp_path),
                        root=str(tmp_path), var_log=str(tmp_path))
    result = health.collect({"cuda_init": False, "kernel_log_lines": 10, "device_open_test": False,
                             "cuda_init_timeout_s": 1}, roots=roots, nvml=session)
    assert result.status == "ok", result.reason
    schema_validator("health.schema.json").validate(result.data)
    return result.data["gpus"]


def test_a_current_nvidia_ml_py_gives_every_version_and_the_gsp_mode(tmp_path):
    first, second = _collect(fake_pynvml.FirmwareModule(), tmp_path)
    assert (first["vbios_version"], second["vbios_version"]) == ("96.00.A5.00.1A", "96.00.74.00.01")
    assert first["inforom_image_version"] == "G520.0282.02.02"
    assert first["gsp_firmware_version"] == "580.159.04"
    assert first["firmware"] == {"gsp_mode": {"current": "enabled", "default": "enabled"},
                                 "inforom_objects": {"oem": "2.1", "ecc": "7.16", "power": {"unavailable": NOT_SUPPORTED}}}


def test_a_gpu_that_answers_not_supported_says_so_in_words():
    module = fake_pynvml.FirmwareModule()
    module.nvmlDeviceGetGspFirmwareMode = fake_pynvml.not_supported
    module.nvmlDeviceGetInforomVersion = fake_pynvml.not_supported
    firmware = read_firmware(NvmlReader(module), "handle0")
    assert firmware["gsp_mode"] == {"unavailable": NOT_SUPPORTED}
    assert firmware["inforom_objects"] == {name: {"unavailable": NOT_SUPPORTED} for name in ("oem", "ecc", "power")}


def test_an_empty_gsp_version_is_no_version(tmp_path):
    module = fake_pynvml.FirmwareModule()
    module.nvmlDeviceGetGspFirmwareVersion = lambda handle: b""
    module.nvmlDeviceGetGspFirmwareMode = lambda handle: [0, 0]
    first = _collect(module, tmp_path)[0]
    assert first["gsp_firmware_version"] == {
        "unavailable": "nvmlDeviceGetGspFirmwareVersion returned '', which could not be read: NVML gave an empty version"}
    assert first["firmware"]["gsp_mode"] == {"current": "disabled", "default": "disabled"}


def test_an_old_nvidia_ml_py_names_the_functions_it_lacks(tmp_path):
    first = _collect(fake_pynvml.FakeModule(), tmp_path)[0]
    assert first["gsp_firmware_version"] == {"unavailable": "this nvidia-ml-py lacks nvmlDeviceGetGspFirmwareVersion"}
    assert first["firmware"]["gsp_mode"] == {"unavailable": "this nvidia-ml-py lacks nvmlDeviceGetGspFirmwareMode"}
    assert first["firmware"]["inforom_objects"]["oem"] == {"unavailable": "this nvidia-ml-py lacks nvmlDeviceGetInforomVersion"}
