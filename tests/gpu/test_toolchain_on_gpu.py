"""toolchain on a real machine with NVIDIA GPUs, their driver, nvidia-ml-py and a CUDA build of torch
(run on the device: python3 -m pytest -m gpu tests/gpu)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_toolchain(tmp_path, env=None):
    out = tmp_path / "toolchain.json"
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "toolchain.py"), "--out", str(out)], check=True,
                   timeout=600, env=env)
    envelope = json.loads(out.read_text())
    pytest.importorskip("jsonschema")
    for name, document in (("envelope", envelope), ("toolchain", envelope["data"])):
        schema_validator(name + ".schema.json").validate(document)
    return envelope, {contract["id"]: contract for contract in envelope["data"]["contracts"]}, out.read_text()


def _gpu_count():
    torch = pytest.importorskip("torch")
    pytest.importorskip("pynvml")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 1:
        pytest.skip("no CUDA GPU visible")
    return count


def test_every_contract_is_decided_and_the_stack_agrees(tmp_path):
    count = _gpu_count()
    envelope, contracts, unused_text = run_toolchain(tmp_path)
    assert envelope["status"] == "ok", envelope["reason"]
    assert all(contract["status"] in ("pass", "fail") for contract in contracts.values())
    for contract_id in ("driver_supports_cuda_build", "nccl_loads", "nvml_cuda_agree"):
        assert contracts[contract_id]["status"] == "pass", contracts[contract_id]["observed"]
    agree = contracts["nvml_cuda_agree"]["details"]
    assert agree["cuda_device_count"] == count and len(agree["cuda_uuids"]) == count
    software = envelope["data"]["software"]
    for key in ("driver_version", "cuda_driver_version", "libcuda_cuda_version", "torch_cuda_version", "nccl_version"):
        assert isinstance(software[key], str), (key, software[key])
    assert contracts["driver_supports_cuda_build"]["details"]["decided_by"] == "libcuda"
    assert contracts["nccl_loads"]["details"]["torch_nccl_version"] == software["nccl_version"]
    # persistence mode depends on how the machine is set up: decided either way, never changed by the probe
    assert contracts["persistence_mode"]["status"] in ("pass", "fail")
    assert len(contracts["persistence_mode"]["details"]["gpus"]) >= count


def test_a_visible_subset_agrees_and_an_empty_list_fails_by_name(tmp_path):
    _gpu_count()
    envelope, contracts, unused_text = run_toolchain(tmp_path)
    first = contracts["nvml_cuda_agree"]["details"]["nvml_uuids"][0]
    envelope, contracts, unused_text = run_toolchain(tmp_path, env=dict(os.environ, CUDA_VISIBLE_DEVICES=first[:12]))
    agree = contracts["nvml_cuda_agree"]
    assert agree["status"] == "pass", agree["observed"]
    assert agree["details"]["expected_uuids"] == [first] and agree["details"]["cuda_uuids"] == [first]
    assert agree["details"]["cuda_visible_devices"] == first[:12]
    envelope, contracts, unused_text = run_toolchain(tmp_path, env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    agree = contracts["nvml_cuda_agree"]
    # an empty list hides every GPU NVML lists: the GPU probes would measure nothing, so the contract fails by name
    assert agree["status"] == "fail" and agree["details"]["cuda_device_count"] == 0, agree["observed"]
    assert agree["observed"].startswith("CUDA_VISIBLE_DEVICES '' hides all"), agree["observed"]


def test_a_distorting_variable_fails_the_environment_contract_by_name(tmp_path):
    _gpu_count()
    # harmless here: the loader ignores a preload it cannot find, and only this probe's processes see the variables
    env = dict(os.environ, NCCL_P2P_DISABLE="1", CUDA_LAUNCH_BLOCKING="1", LD_PRELOAD="/nonexistent/secret-preload-XYZ.so")
    envelope, contracts, text = run_toolchain(tmp_path, env=env)
    contract = contracts["no_distorting_environment"]
    assert contract["status"] == "fail"
    assert {"NCCL_P2P_DISABLE", "CUDA_LAUNCH_BLOCKING", "LD_PRELOAD"} <= set(contract["details"]["set"])
    assert "secret-preload-XYZ" not in text
    assert envelope["status"] == "ok", envelope["reason"]
