"""No CPU stand-in on a GPU host: with the host's NVIDIA GPUs hidden from CUDA (CUDA_VISIBLE_DEVICES='', a CPU build
of torch, no kernel module) every GPU probe ends in an error whose reason is the mismatch, never a CPU measurement.

The host is a fake /proc + /sys tree (and a fake NVML) that probelib.measure.devices reads in this process; the probes
run through their own scripts (runpy, as `python probes/<probe>.py --out F` would) with torch's CUDA switched off.
"""
import json
import runpy
import sys
import types

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from host_roots import host_reader
from probe_runs import probe_path
from probe_packages.precision.safetensors_file import write_file
from probelib.measure import devices
from probelib.measure.devices import GPU_PROBES_RULE, GpuHiddenError, measured_devices
from probelib.measure.host_gpus import HostGpus
from probelib.runner import ProbeError

torch = pytest.importorskip("torch")
HIDDEN = ("NVML lists 1 NVIDIA GPU(s) but CUDA sees 0 (CUDA_VISIBLE_DEVICES=''): " + GPU_PROBES_RULE
          + "; unset or fix CUDA_VISIBLE_DEVICES, or run the health probe for why CUDA cannot use them")
GPU_PROBES = ("membw", "gemm", "hostbw", "p2p", "collective", "collective_hosts", "load", "precision")


class FakeCuda:
    """torch.cuda of a CUDA build that sees ``count`` GPUs."""

    def __init__(self, count):
        self.count = count

    def is_available(self):
        return self.count > 0

    def device_count(self):
        return self.count

    @staticmethod
    def get_device_properties(index):
        return types.SimpleNamespace(name="NVIDIA H200", uuid="0123-%d" % index, total_memory=143771 << 20, major=9,
                                     minor=0)


def fake_torch(count, cuda_build="12.8"):
    return types.SimpleNamespace(cuda=FakeCuda(count), version=types.SimpleNamespace(cuda=cuda_build))


@pytest.fixture
def hidden_host(tmp_path, monkeypatch):
    """A host with one NVIDIA GPU that NVML lists, and CUDA_VISIBLE_DEVICES=''."""
    monkeypatch.setattr(devices, "read_host_gpus", host_reader(tmp_path, gpus=1, nvml_gpus=1))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")


def test_hidden_gpus_raise_the_mismatch_instead_of_measuring_the_cpu(hidden_host):
    for requested in ("auto", "cuda"):
        with pytest.raises(GpuHiddenError) as raised:
            measured_devices(fake_torch(0), requested)
        assert str(raised.value) == HIDDEN and isinstance(raised.value, ProbeError)
        assert raised.value.data == {"host_gpu_count": 1, "host_gpu_source": "nvml", "nvidia_kernel_module_loaded": True,
                                     "cuda_device_count": 0}
    assert [device["kind"] for device in measured_devices(fake_torch(0), "cpu")] == ["cpu"]  # asked for: still there


def test_the_reason_says_when_the_variable_is_unset_and_when_torch_is_a_cpu_build(hidden_host, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with pytest.raises(GpuHiddenError) as raised:
        measured_devices(fake_torch(0))
    assert str(raised.value) == ("NVML lists 1 NVIDIA GPU(s) but CUDA sees 0 (CUDA_VISIBLE_DEVICES is unset): %s; run "
                                 "the health probe for why CUDA cannot use them" % GPU_PROBES_RULE)
    with pytest.raises(GpuHiddenError) as raised:
        measured_devices(fake_torch(0, cuda_build=None))
    assert "(CUDA_VISIBLE_DEVICES is unset; torch is a CPU build)" in str(raised.value)
    assert "set gpufleet_python to a Python with a CUDA build of torch" in str(raised.value)


def test_gpus_on_the_pci_bus_without_a_kernel_module_say_so(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "read_host_gpus", host_reader(tmp_path, gpus=2, module_loaded=False))
    with pytest.raises(GpuHiddenError) as raised:
        measured_devices(fake_torch(0))
    assert str(raised.value).startswith("2 NVIDIA GPU(s) on the PCI bus but no NVIDIA kernel module loaded: "
                                        "/proc/driver/nvidia is missing, so CUDA sees 0: " + GPU_PROBES_RULE)
    assert raised.value.data["host_gpu_source"] == "pci" and not raised.value.data["nvidia_kernel_module_loaded"]


def test_the_other_sources_name_themselves():
    proc = HostGpus(count=2, source="proc", evidence="", kernel_module_loaded=True)
    assert devices.hidden_gpus_reason(proc, "", "12.8").startswith("the NVIDIA kernel module knows 2 GPU(s) but CUDA sees 0")
    pci = HostGpus(count=1, source="pci", evidence="", kernel_module_loaded=True)
    assert devices.hidden_gpus_reason(pci, "3", "12.8").startswith("1 NVIDIA GPU(s) on the PCI bus but CUDA sees 0 "
                                                                   "(CUDA_VISIBLE_DEVICES='3')")


def test_a_host_without_nvidia_gpus_measures_the_cpu_as_before(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "read_host_gpus", host_reader(tmp_path, gpus=0, module_loaded=False))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    (cpu,) = measured_devices(fake_torch(0))
    assert cpu["kind"] == "cpu" and cpu["torch_device"] == "cpu"
    assert measured_devices(fake_torch(0), "cuda") == []


def test_cuda_seeing_some_of_the_gpus_measures_those(tmp_path, monkeypatch):
    monkeypatch.setattr(devices, "read_host_gpus", host_reader(tmp_path, gpus=2, nvml_gpus=2))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    (gpu,) = measured_devices(fake_torch(1))
    assert (gpu["kind"], gpu["torch_device"], gpu["uuid"]) == ("cuda", "cuda:0", "GPU-0123-0")


def run_script(tmp_path, monkeypatch, probe, params=None):
    """probes/<probe>.py --out F [--params P], in this process; returns the envelope it wrote."""
    out = tmp_path / (probe + ".json")
    argv = [probe_path(probe), "--out", str(out)]
    if params is not None:
        params_file = tmp_path / (probe + "-params.json")
        params_file.write_text(json.dumps(params))
        argv += ["--params", str(params_file)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exited:
        runpy.run_path(argv[0], run_name="__main__")
    assert exited.value.code == 0
    return json.loads(out.read_text())


def probe_params(probe, tmp_path):
    if probe == "collective_hosts":
        return {"nnodes": 1, "master_addr": "127.0.0.1"}
    if probe == "precision":
        checkpoint = tmp_path / "m.safetensors"
        write_file(str(checkpoint), [("w.weight", "F32", [1, 1], b"\0\0\x80?")], {})
        return {"checkpoint": str(checkpoint)}
    return None


@pytest.fixture
def cuda_off(monkeypatch):
    """torch as CUDA_VISIBLE_DEVICES='' leaves it on a GPU host: CUDA not available, no device."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.mark.parametrize("probe", GPU_PROBES)
def test_every_gpu_probe_ends_in_an_error_whose_reason_is_the_mismatch(probe, tmp_path, monkeypatch, hidden_host, cuda_off):
    envelope = run_script(tmp_path, monkeypatch, probe, probe_params(probe, tmp_path))
    schema_validator("envelope.schema.json").validate(envelope)
    assert envelope["status"] == "error", envelope["reason"]
    assert envelope["reason"].startswith("NVML lists 1 NVIDIA GPU(s) but CUDA sees 0 (CUDA_VISIBLE_DEVICES=''")
    assert GPU_PROBES_RULE in envelope["reason"] and "raised" not in envelope["reason"]
    # the counts that show the mismatch, and nothing measured (beside the record of other processes on the GPUs, which
    # every measuring probe keeps: here NVML cannot be loaded, and it says so)
    data = dict(envelope["data"])
    record = data.pop("foreign_gpu_processes", None)
    assert record is None or "unavailable" in record
    assert data == {"host_gpu_count": 1, "host_gpu_source": "nvml", "nvidia_kernel_module_loaded": True, "cuda_device_count": 0}


@pytest.mark.parametrize("probe", ("p2p", "load"))
def test_without_nvidia_gpus_p2p_and_load_stay_unavailable(probe, tmp_path, monkeypatch, cuda_off):
    monkeypatch.setattr(devices, "read_host_gpus", host_reader(tmp_path, gpus=0, module_loaded=False))
    envelope = run_script(tmp_path, monkeypatch, probe, {"quick": True} if probe == "p2p" else None)
    assert envelope["status"] == "unavailable"
    if probe == "p2p":
        assert envelope["reason"] == "0 GPU(s) visible: no pair to measure"
    else:
        assert envelope["reason"].startswith("torch sees no CUDA GPU")
    schema_validator(probe + ".schema.json").validate(envelope["data"])


def test_the_toolchain_contract_fails_when_cuda_visible_devices_hides_every_gpu():
    from probe_packages.toolchain.devices_contract import HIDDEN_REMEDY, decide  # pylint: disable=import-outside-toplevel

    nvml = {"uuids": ["GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"], "problem": None}
    seen_none = {"problem": None, "error": None, "stage": "done", "device_count": 0, "uuids": []}
    for visible in ("", "all"):
        contract = decide(nvml, visible, seen_none)
        assert contract["status"] == "fail" and contract["remedy"] == HIDDEN_REMEDY
        assert contract["observed"] == "CUDA_VISIBLE_DEVICES %r hides all 1 GPU(s) NVML lists (CUDA sees 0)" % visible
        assert contract["details"]["cuda_device_count"] == 0 and contract["details"]["expected_uuids"] == []
    error = {"type": "RuntimeError", "message": "No CUDA GPUs are available"}
    contract = decide(nvml, "", dict(seen_none, error=error, device_count=None))
    assert contract["status"] == "fail" and "(CUDA raised RuntimeError: No CUDA GPUs are available)" in contract["observed"]
    assert decide({"uuids": [], "problem": None}, "", seen_none)["status"] == "pass"  # nothing to hide
