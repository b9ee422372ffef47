"""Runs the fusion probe for real on this machine (the CPU path: torch eager against torch.compile's C++ kernel) and
checks its envelope; then drives one device's run in-process for a compile that fails and outputs that disagree."""
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems
from probe_runs import assert_foreign_processes_recorded, assert_schema_header, probe_path, run_probe
from probe_packages.fusion import compare
from probe_packages.fusion.device_run import DeviceRun
from probe_packages.fusion.plan import resolve_plan
from probelib.params import probe_defaults

torch = pytest.importorskip("torch")

CPU = {"kind": "cpu", "index": 0, "torch_device": "cpu", "name": "test CPU", "uuid": {"unavailable": "a CPU has no UUID"},
       "memory_total_mib": 1024, "compute_capability": {"unavailable": "not a GPU"}}


@pytest.fixture(scope="module")
def envelope(tmp_path_factory):
    """One quick run (two sizes) with a membw bandwidth handed over as the controller would derive it."""
    return run_probe(tmp_path_factory.mktemp("fusion"), "fusion",
                     {"quick": True, "membw_bandwidth_gbps": {"cpu": 20.0}, "membw_bandwidth_source": "test: membw 20 GB/s"},
                     timeout=280, python=sys.executable)


def test_schema_header():
    assert_schema_header("fusion")


def test_help_works_without_running():
    completed = subprocess.run([sys.executable, probe_path("fusion"), "--help"], stdout=subprocess.PIPE, timeout=60, check=True)
    assert b"inductor" in completed.stdout


def test_the_cpu_path_runs_and_its_envelope_is_valid(envelope):
    assert envelope_problems(envelope) == []
    assert_foreign_processes_recorded(envelope["data"])
    assert envelope["probe"] == "fusion" and envelope["status"] in ("ok", "partial"), envelope["reason"]
    data = envelope["data"]
    assert data["plan"]["name"] == "cpu-default-quick" and data["plan"]["dtype"] == "float32"
    assert data["traffic"]["unfused_tensor_passes"] == 11 and data["traffic"]["fused_tensor_passes"] == 5
    (entry,) = data["devices"]
    assert entry["membw_bandwidth_gbps"] == 20.0 and entry["membw_bandwidth_source"] == "test: membw 20 GB/s"
    assert [point["elements"] for point in entry["points"]] == data["plan"]["sizes_elements"]
    for point in entry["points"]:
        unfused = point["unfused"]
        assert point["status"] == "measured", point["reason"]
        assert unfused["traffic_bytes"] == 11 * point["elements"] * 4
        seconds = unfused["time_per_iteration_s"]
        assert unfused["achieved_gbps"] == pytest.approx(unfused["traffic_bytes"] / seconds / 1e9, rel=1e-4)
        assert unfused["of_membw_pct"] == pytest.approx(100 * unfused["achieved_gbps"] / 20.0, rel=1e-4)
        assert point["predicted_speedup"] == 2.2 and point["explanation"]


def test_the_fused_version_is_measured_or_says_why_not(envelope):
    (entry,) = envelope["data"]["devices"]
    for point in entry["points"]:
        fused = point["fused"]
        if "unavailable" in fused:
            # this host's torch could not compile: the exception's words, and the probe is partial for it
            assert "torch.compile(backend='inductor') failed" in fused["unavailable"] or "not tried again" in fused["unavailable"]
            assert entry["status"] == "partial" and envelope["status"] == "partial"
            continue
        assert fused["traffic_bytes"] == 5 * point["elements"] * 4
        assert point["verification"]["outputs_agree"] is True and point["verification"]["max_abs_diff"] <= 1e-5
        assert point["compile"]["compile_s"] > 0
        assert point["measured_speedup"] == pytest.approx(
            point["unfused"]["time_per_iteration_s"] / fused["time_per_iteration_s"], rel=1e-4)


def _plan(**given):
    params = dict(probe_defaults("fusion"), sizes_elements=[256, 1024], target_point_ms=1.0, repeats=2)
    params.update(given)
    return resolve_plan(params, "cpu")


def test_a_compile_that_fails_leaves_the_fused_version_unavailable_in_its_words(monkeypatch):
    def refuse(*unused_args, **unused_kwargs):
        raise RuntimeError("no C++ compiler in this test")

    monkeypatch.setattr(torch, "compile", refuse)
    entry = DeviceRun(torch, CPU, _plan(), None, "").run()
    assert entry["status"] == "partial" and len(entry["problems"]) == 1
    first, second = entry["points"]
    assert first["fused"] == {
        "unavailable": "torch.compile(backend='inductor') failed: RuntimeError: no C++ compiler in this test"}
    assert second["fused"]["unavailable"].startswith("not tried again: torch.compile(backend='inductor') failed")
    assert first["status"] == "measured" and first["unfused"]["time_per_iteration_s"] > 0
    assert "unavailable" in first["measured_speedup"] and "no C++ compiler" in first["explanation"]
    assert "membw_bandwidth_gbps was not given" in first["unfused"]["of_membw_pct"]["unavailable"]


def test_compile_off_is_no_failure():
    entry = DeviceRun(torch, CPU, _plan(compile=False, sizes_elements=[256]), 20.0, "").run()
    assert entry["status"] == "ok" and "compile is false" in entry["points"][0]["fused"]["unavailable"]


def test_outputs_that_disagree_are_an_error_for_that_size(monkeypatch):
    monkeypatch.setitem(compare.TOLERANCES, "float32", (0.0, 0.0))
    monkeypatch.setattr("probe_packages.fusion.chain.CompiledChain.compile_for",
                        lambda self, inputs: ((lambda: inputs[0] * 2.0), {"compile_s": 0.0, "generated_kernels": 1}))
    entry = DeviceRun(torch, CPU, _plan(sizes_elements=[256]), None, "").run()
    (point,) = entry["points"]
    assert point["status"] == "error" and "disagree" in point["reason"] and point["verification"]["outputs_agree"] is False
    assert point["verification"]["max_abs_diff"] > 0 and "unavailable" in point["fused"]
    assert entry["status"] == "error" and "disagree" in entry["problems"][0]
