from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
import fake_pynvml
import health
from probe_packages.health.software import format_cuda_version
from probelib.nvml.access import NvmlReader, NvmlSession, describe_nvml_error
from probelib.nvml.nvlink import read_nvlinks
from probelib.params import probe_defaults
from probelib.system.roots import SystemRoots
from probelib.system.sysfs import normalize_bus_id, parse_cpulist


def _validator():
    return schema_validator("health.schema.json")


def test_nvml_error_reasons():
    assert describe_nvml_error(fake_pynvml.NVMLError(3, "Not Supported")) == \
        "not supported by this GPU (NVML: Not Supported)"
    assert describe_nvml_error(fake_pynvml.NVMLError(999, "Unknown Error")) == \
        "NVML call failed (NVML: Unknown Error)"
    assert describe_nvml_error(ValueError("bad")) == "ValueError: bad"


def test_reader_names_functions_this_nvidia_ml_py_lacks():
    reader = NvmlReader(fake_pynvml.FakeModule())
    assert reader.value("nvmlDeviceGetVbiosVersion", "handle0") == {
        "unavailable": "this nvidia-ml-py lacks nvmlDeviceGetVbiosVersion"}
    assert reader.value("nvmlSystemGetDriverVersion") == "550.54.15"
    value, used = reader.first_value(["nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"],
                                     convert=format_cuda_version)
    assert (value, used) == ("12.4", "nvmlSystemGetCudaDriverVersion")


def _missing_pynvml():
    raise ImportError("No module named 'pynvml'")


def _proc_with_driver(tmp_path):
    (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
    return str(tmp_path / "proc")


def test_session_reasons_without_pynvml_driver_or_gpu(tmp_path):
    proc = _proc_with_driver(tmp_path)
    session = NvmlSession().open(importer=_missing_pynvml, proc_root=proc)
    assert session.reason.startswith("nvidia-ml-py is not installed for ")
    assert "pip install nvidia-ml-py" in session.reason

    module = fake_pynvml.FakeModule()
    module.nvmlInit = fake_pynvml.library_not_found
    session = NvmlSession().open(importer=lambda: module, proc_root=proc)
    assert session.reason.startswith("NVML library not found: no NVIDIA driver installed")
    assert not session.usable

    session = NvmlSession().open(importer=lambda: fake_pynvml.FakeModule(count=0), proc_root=proc)
    assert session.reason == "the NVIDIA driver sees no GPU (NVML reports 0 devices)"
    assert session.initialized and not session.usable


def test_without_the_kernel_module_that_is_the_first_reason(tmp_path):
    proc = str(tmp_path)  # no driver/nvidia in it
    first = "no NVIDIA kernel module loaded: /proc/driver/nvidia is missing"
    session = NvmlSession().open(importer=_missing_pynvml, proc_root=proc)
    assert session.reason.startswith(first + "; nvidia-ml-py is not installed for ")
    assert session.device_count == {"unavailable": session.reason}

    module = fake_pynvml.FakeModule()
    module.nvmlInit = fake_pynvml.library_not_found
    session = NvmlSession().open(importer=lambda: module, proc_root=proc)
    assert session.reason.startswith(first + "; NVML library not found")
    assert not session.usable

    # a sandbox may hide /proc/driver/nvidia from a driver that works: NVML's answer stands
    session = NvmlSession().open(importer=fake_pynvml.FakeModule, proc_root=proc)
    assert session.usable and session.reason == ""


class NoNvlinkModule(fake_pynvml.FakeModule):
    """A 1-GPU VM: NVML answers Not Supported for every one of the 18 links."""

    NVML_NVLINK_MAX_LINKS = 18

    def nvmlDeviceGetNvLinkState(self, handle, link):
        raise fake_pynvml.NVMLError(3, "Not Supported")


def test_nvlinks_nvml_calls_not_supported_are_counted():
    assert read_nvlinks(NvmlReader(NoNvlinkModule(count=1)), "handle0") == {
        "links": [], "supported_count": 0, "active_count": 0, "not_supported_count": 18, "links_queried": 18}
    two_of_four = read_nvlinks(NvmlReader(fake_pynvml.FakeModule()), "handle0")
    assert (two_of_four["supported_count"], two_of_four["not_supported_count"], two_of_four["links_queried"]) == (2, 2, 4)


def test_units_and_bus_ids():
    assert format_cuda_version(13000) == "13.0"
    assert format_cuda_version(12040) == "12.4"
    assert normalize_bus_id("00000000:1B:00.0") == "0000:1b:00.0"
    assert normalize_bus_id("0000:9b:00") == "0000:9b:00.0"
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]


def test_collect_with_an_old_nvidia_ml_py_on_two_gpus(tmp_path):
    module = fake_pynvml.FakeModule()
    session = NvmlSession().open(importer=lambda: module)
    roots = SystemRoots(proc=str(tmp_path), sys=str(tmp_path), dev=str(tmp_path), etc=str(tmp_path),
                        root=str(tmp_path), var_log=str(tmp_path))
    result = health.collect({"cuda_init": False, "kernel_log_lines": 10, "device_open_test": False,
                             "cuda_init_timeout_s": 1}, roots=roots, nvml=session)
    assert module.shut_down
    assert result.status == "ok", result.reason
    data = result.data
    _validator().validate(data)
    first = data["gpus"][0]
    assert first["name"] == "NVIDIA H100 80GB HBM3"
    assert first["pci"] == {"bus_id": "0000:1b:00.0", "device_id": "0x233010de", "subsystem_id": "0x16c110de"}
    assert first["memory"] == {"total_mib": 81559, "used_mib": 512, "free_mib": 81047}
    assert first["clock_event_reasons"]["method"] == "nvmlDeviceGetCurrentClocksThrottleReasons"
    assert first["clock_event_reasons"]["names"] == ["sw_power_cap"]
    assert first["retired_pages"] == {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
    assert first["remapped_rows"] == {"correctable_count": 0, "uncorrectable_count": 1, "pending": True,
                                      "failure": False}
    assert first["ecc"]["mode_current"] == "enabled" and first["ecc"]["mode_pending"] == "disabled"
    assert first["power"]["draw_w"] == 71.234
    assert first["vbios_version"] == {"unavailable": "this nvidia-ml-py lacks nvmlDeviceGetVbiosVersion"}
    assert first["nvlink"]["supported_count"] == 2 and first["nvlink"]["active_count"] == 2
    assert first["nvlink"]["not_supported_count"] == 2 and first["nvlink"]["links_queried"] == 4
    process = first["processes"]["compute"][0]
    assert process["pid"] == 999999999 and process["used_memory_mib"] == 1024.0
    assert "not visible" in process["name"]["unavailable"]
    pair = data["topology"]["pairs"][0]
    assert (pair["gpu_a"], pair["gpu_b"], pair["common_ancestor"]) == (0, 1, "NODE")
    assert pair["nvlink_count"] == 2 and pair["nvlink_via"] == "direct" and pair["link_class"] == "NV2"
    assert pair["p2p"] == {"read": "ok", "write": "ok", "nvlink": "ok", "atomics": "not_supported"}
    assert data["software"]["driver_version"] == "550.54.15"
    assert data["software"]["cuda_driver_version"] == "12.4"
    assert result.environment["driver_version"] == "550.54.15"
    assert data["cuda_init"] == {"unavailable": "skipped: parameter cuda_init is false"}
    assert data["errors"] == []
    assert data["device_nodes"]["after_init"]["changes"] == []


def test_a_raising_section_makes_the_probe_partial(tmp_path, monkeypatch):
    def broken(context):
        raise RuntimeError("boom")

    monkeypatch.setattr(health, "REGISTRY", [("platform", broken)] + health.REGISTRY[1:])
    session = NvmlSession().open(importer=fake_pynvml.FakeModule)
    roots = SystemRoots(proc=str(tmp_path), sys=str(tmp_path), dev=str(tmp_path), etc=str(tmp_path),
                        root=str(tmp_path), var_log=str(tmp_path))
    result = health.collect(dict(probe_defaults("health"), cuda_init=False), roots=roots, nvml=session)
    assert result.status == "partial"
    assert result.data["errors"] == [{"section": "platform", "error": "RuntimeError: boom"}]
    assert result.data["platform"] == {"unavailable": "section platform failed: RuntimeError: boom"}
    assert "platform" in result.reason
    assert isinstance(result.data["gpus"], list)
    _validator().validate(result.data)
