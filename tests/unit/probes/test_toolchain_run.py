"""The toolchain probe as a whole: run for real here (CPU-only torch, no NVML) and in-process on a faked 2-GPU host.

Both envelopes are validated against the envelope schema and schemas/toolchain.schema.json.
"""
import copy
import os

import pytest

import fake_pynvml
import toolchain
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import assert_schema_header, probe_help, run_probe, shadow_module, validate_envelope
from probe_packages.toolchain.children import DEVICES_CHILD, LIBRARIES_CHILD
from probe_packages.toolchain.contract import ORDER, make_contract, probe_status
from probelib.nvml.access import NvmlSession
from probelib.params import probe_defaults

DISTORTING = ("CUDA_INJECTION64_PATH", "CUDA_INJECTION32_PATH", "CUDA_LAUNCH_BLOCKING", "LD_PRELOAD", "NCCL_P2P_DISABLE",
              "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "PYTORCH_NO_CUDA_MEMORY_CACHING", "CUDA_MPS_PIPE_DIRECTORY",
              "NVTX_INJECTION64_PATH", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_VISIBLE_DEVICES")


def _clean_env(**extra):
    env = {key: value for key, value in os.environ.items() if key not in DISTORTING and not key.startswith("CUDA_COREDUMP_")}
    env.update(extra)
    return env


def _run(tmp_path, params=None, env=None):
    """The envelope and the text of the file it was read from (the default environment: this one, cleaned)."""
    envelope = run_probe(tmp_path, "toolchain", params, env if env is not None else _clean_env())
    return envelope, (tmp_path / "toolchain.json").read_text()


def _by_id(envelope):
    return {contract["id"]: contract for contract in envelope["data"]["contracts"]}


def test_schema_header():
    schema = assert_schema_header("toolchain")
    assert set(toolchain.METHOD) == set(schema["properties"]["method"]["required"])


def test_probe_runs_here_and_matches_the_schemas(tmp_path):
    envelope, unused_text = _run(tmp_path)
    validate_envelope(envelope, "toolchain")
    contracts = _by_id(envelope)
    assert [contract["id"] for contract in envelope["data"]["contracts"]] == list(ORDER)
    assert contracts["no_distorting_environment"]["status"] == "pass"
    for contract in contracts.values():
        assert contract["status"] in ("pass", "fail", "unavailable")
        if contract["status"] == "unavailable":
            assert contract["observed"].startswith("not decided: ") and contract["remedy"]
    software = envelope["data"]["software"]
    if isinstance(software["torch_cuda_version"], dict) and isinstance(software["driver_version"], dict):
        # this CPU-only machine: no NVML and a CPU build of torch
        assert envelope["status"] == "unavailable"
        assert envelope["reason"].startswith("no usable NVIDIA driver (") and "decided: no_distorting_environment" in \
            envelope["reason"]
        for contract_id in ("driver_supports_cuda_build", "nccl_loads", "nvml_cuda_agree", "persistence_mode"):
            assert contracts[contract_id]["status"] == "unavailable", contract_id
        assert "torch built without CUDA" in contracts["nccl_loads"]["observed"]
        assert envelope["environment"]["torch_cuda_version"] == "none (CPU build or no torch)"
        assert envelope["duration_s"] < 60
    assert envelope["data"]["errors"] == []


def test_distorting_variables_fail_by_name_and_their_values_stay_out(tmp_path):
    env = _clean_env(CUDA_INJECTION64_PATH="/nonexistent/secret-tool-XYZ.so", CUDA_LAUNCH_BLOCKING="1",
                     NCCL_P2P_DISABLE="0", CUDA_VISIBLE_DEVICES="GPU-visible-value-kept")
    envelope, text = _run(tmp_path, env=env)
    validate_envelope(envelope, "toolchain")
    contract = _by_id(envelope)["no_distorting_environment"]
    assert contract["status"] == "fail"
    assert contract["details"]["set"] == ["CUDA_INJECTION64_PATH", "CUDA_LAUNCH_BLOCKING"]
    assert contract["details"]["set_inert"] == ["NCCL_P2P_DISABLE"]
    assert contract["remedy"].startswith("Unset CUDA_INJECTION64_PATH, CUDA_LAUNCH_BLOCKING in the environment")
    assert "secret-tool-XYZ" not in text
    # CUDA_VISIBLE_DEVICES is the one value recorded: it decides which GPUs CUDA should show
    agree = _by_id(envelope)["nvml_cuda_agree"]
    assert agree["evidence"][0] == "CUDA_VISIBLE_DEVICES: 'GPU-visible-value-kept'"


def test_bad_parameters_are_an_error_envelope(tmp_path):
    envelope, unused_text = _run(tmp_path, {"cuda_timeout_s": 0})
    assert envelope["status"] == "error" and "cuda_timeout_s" in envelope["reason"]
    envelope, unused_text = _run(tmp_path, {"timeout": 5})
    assert envelope["status"] == "error" and "unknown parameter 'timeout'" in envelope["reason"]
    schema_validator("envelope.schema.json").validate(envelope)


def test_without_torch_the_probe_still_decides_what_it_can(tmp_path):
    envelope, unused_text = _run(tmp_path, env=_clean_env(PYTHONPATH=shadow_module(tmp_path)))
    validate_envelope(envelope, "toolchain")
    contracts = _by_id(envelope)
    assert "torch is not importable" in contracts["nccl_loads"]["observed"]
    assert contracts["no_distorting_environment"]["status"] == "pass"
    completed = probe_help("toolchain")
    assert completed.returncode == 0 and b"cuda_timeout_s" in completed.stdout


class TwoGpuModule(fake_pynvml.FakeModule):
    """The 2-GPU fake with what the toolchain probe reads: UUIDs, persistence mode, the _v2 CUDA version."""

    persistence = (1, 1)

    def nvmlDeviceGetUUID(self, handle):
        return {"handle0": "GPU-aaaa", "handle1": "GPU-bbbb"}[handle]

    def nvmlDeviceGetPersistenceMode(self, handle):
        return self.persistence[int(handle[-1])]

    def nvmlSystemGetCudaDriverVersion_v2(self):
        return 13000

    def nvmlDeviceGetMigMode(self, handle):
        return [0, 0]


LIBRARIES = {"stage": "done", "error": None, "torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0",
             "libcuda": {"loaded": True, "rc": 0, "version": 13000, "paths": ["/usr/lib/libcuda.so.580.65.06"]},
             "nccl_torch": {"version": [2, 27, 3]},
             "nccl_library": {"path": "/site/nvidia/nccl/lib/libnccl.so.2", "in_use": True, "loaded": True, "rc": 0,
                              "code": 22703, "mapped": ["/site/nvidia/nccl/lib/libnccl.so.2"], "candidates": []}}
DEVICES = {"stage": "done", "error": None, "device_count": 2, "uuids": ["GPU-aaaa", "GPU-bbbb"]}


def _fake_host(monkeypatch, module, libraries=None, devices=None):
    monkeypatch.setattr(toolchain, "open_nvml", lambda: NvmlSession().open(importer=lambda: module))
    answers = {LIBRARIES_CHILD: libraries, DEVICES_CHILD: devices}

    def run_report(code, timeout_s):
        assert timeout_s == 120.0
        report = answers[code]
        return {"report": report, "failure": None if report else "the fresh Python died of SIGSEGV before reporting",
                "wall_s": 1.0}
    monkeypatch.setattr(toolchain, "run_report", run_report)
    for name in DISTORTING:
        monkeypatch.delenv(name, raising=False)


def test_a_consistent_two_gpu_host_is_ok_with_every_contract_passed(monkeypatch):
    _fake_host(monkeypatch, TwoGpuModule(), copy.deepcopy(LIBRARIES), copy.deepcopy(DEVICES))
    result = toolchain.collect(dict(probe_defaults("toolchain")))
    schema_validator("toolchain.schema.json").validate(result.data)
    assert (result.status, result.reason) == ("ok", "")
    assert [contract["status"] for contract in result.data["contracts"]] == ["pass"] * 5
    assert result.data["software"] == {
        "driver_version": "550.54.15", "cuda_driver_version": "13.0", "libcuda_cuda_version": "13.0",
        "libcuda_path": "/usr/lib/libcuda.so.580.65.06", "torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0",
        "nccl_version": "2.27.3", "nccl_library_path": "/site/nvidia/nccl/lib/libnccl.so.2",
        "nccl_library_version": "2.27.3"}
    assert result.environment == {"torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0",
                                  "driver_version": "550.54.15"}


def test_failed_contracts_keep_the_probe_ok(monkeypatch):
    module = TwoGpuModule()
    module.persistence = (1, 0)
    devices = dict(DEVICES, device_count=1, uuids=["GPU-aaaa"])
    _fake_host(monkeypatch, module, copy.deepcopy(LIBRARIES), devices)
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    result = toolchain.collect(dict(probe_defaults("toolchain")))
    schema_validator("toolchain.schema.json").validate(result.data)
    statuses = {contract["id"]: contract["status"] for contract in result.data["contracts"]}
    assert statuses == {"driver_supports_cuda_build": "pass", "nccl_loads": "pass", "nvml_cuda_agree": "fail",
                        "no_distorting_environment": "fail", "persistence_mode": "fail"}
    assert result.status == "ok"


def test_a_crashing_cuda_side_is_partial(monkeypatch):
    _fake_host(monkeypatch, TwoGpuModule(), copy.deepcopy(LIBRARIES), None)
    result = toolchain.collect(dict(probe_defaults("toolchain")))
    schema_validator("toolchain.schema.json").validate(result.data)
    assert result.status == "partial"
    assert result.reason == ("1 of 5 contracts not decided: nvml_cuda_agree (not decided: the fresh Python died of "
                             "SIGSEGV before reporting)")


def test_a_decision_that_raises_is_an_error_entry(monkeypatch):
    _fake_host(monkeypatch, TwoGpuModule(), copy.deepcopy(LIBRARIES), copy.deepcopy(DEVICES))

    def broken(*unused_args):
        raise KeyError("boom")
    monkeypatch.setattr(toolchain.persistence, "decide", broken)
    result = toolchain.collect(dict(probe_defaults("toolchain")))
    schema_validator("toolchain.schema.json").validate(result.data)
    assert result.status == "partial" and result.data["errors"] == [{"section": "persistence_mode", "error": "KeyError: 'boom'"}]
    assert result.data["contracts"][4]["status"] == "unavailable"


def test_probe_status_rules():
    passed = [make_contract(contract_id, "pass", "fine", "fine", "", ["read"]) for contract_id in ORDER]
    assert probe_status(passed, None, None) == ("ok", "")
    failed = [make_contract(contract_id, "fail", "bad", "fine", "fix it", ["read"]) for contract_id in ORDER]
    assert probe_status(failed, None, None) == ("ok", "")
    mixed = passed[:4] + [make_contract("persistence_mode", "unavailable", "not decided: x", "fine", "do y", ["read"])]
    assert probe_status(mixed, None, None) == ("partial", "1 of 5 contracts not decided: persistence_mode (not decided: x)")
    status, reason = probe_status(mixed, "NVML library not found", "torch built without CUDA")
    assert status == "unavailable" and reason.endswith("decided: driver_supports_cuda_build, nccl_loads, nvml_cuda_agree, "
                                                       "no_distorting_environment")
    with pytest.raises(ValueError):
        make_contract("persistence_mode", "warn", "x", "y", "z", ["e"])


def test_mig_mode_read_through_nvml_leaves_the_device_comparison_undecided(monkeypatch):
    class MigModule(TwoGpuModule):
        def nvmlDeviceGetMigMode(self, handle):
            return [1, 1] if handle == "handle1" else [0, 0]
    _fake_host(monkeypatch, MigModule(), copy.deepcopy(LIBRARIES), copy.deepcopy(DEVICES))
    result = toolchain.collect(dict(probe_defaults("toolchain")))
    agree = result.data["contracts"][2]
    assert agree["status"] == "unavailable" and "MIG mode is enabled on GPU(s) 1" in agree["observed"]
    assert result.status == "partial"
