"""Runs the collective probe for real on the CPU path (gloo, CPU ranks over loopback) and checks its envelope."""
import json
import os
import re
import subprocess

import jsonschema
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import assert_foreign_processes_recorded, PYTHON, ROOT, assert_schema_header, run_probe, shadow_module, validate_envelope
from probelib.params import probe_defaults

MIB = 1 << 20
FAST = {"device": "cpu", "cpu_max_bytes": MIB, "target_time_per_size_s": 0.01, "warmup": 2, "min_iterations": 3}


def validate(envelope):
    validate_envelope(envelope, "collective")


def run(tmp_path, params=None, env=None, timeout=180):
    """A run in this environment (or env) with TMPDIR this test's folder; no worker outlives it."""
    envelope = run_probe(tmp_path, "collective", params, dict(os.environ if env is None else env, TMPDIR=str(tmp_path)), timeout)
    assert not leftover_workers(tmp_path)
    return envelope


def leftover_workers(tmp_path):
    """Processes whose command line names this test's temporary directory (the workers' spec files lie there)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/cmdline" % entry, "rb") as handle:
                    if str(tmp_path).encode() in handle.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def test_schema_header():
    assert_schema_header("collective")


def test_gloo_with_two_cpu_ranks(tmp_path):
    env = dict(os.environ, NCCL_ALGO="Ring", SECRET_TOKEN="do-not-leak-this", CUDA_DEVICE_ORDER="PCI_BUS_ID")
    env.pop("GLOO_SOCKET_IFNAME", None)
    envelope = run(tmp_path, FAST, env)
    validate(envelope)
    assert envelope["status"] == "ok" and envelope["reason"] == "", envelope["reason"]
    data = envelope["data"]
    plan = data["plan"]
    assert (plan["backend"], plan["kind"], plan["world_size"], plan["dtype"], plan["op"]) == ("gloo", "cpu", 2, "float32", "sum")
    assert plan["sizes_bytes"] == [8 << shift for shift in range(18)] and plan["max_bytes"] == MIB
    assert "not a GPU interconnect" in plan["note"] and "clamped to [3, 1000]" in plan["iterations_rule"]
    assert plan["worker_env_set"] == {"GLOO_SOCKET_IFNAME": "lo"}
    assert data["devices"] == [] and data["errors"] == []
    assert data["software"]["backend"] == "gloo" and data["software"]["torch_version"]
    assert_foreign_processes_recorded(data)
    assert data["environment_nccl"] == {"NCCL_ALGO": "Ring", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert "do-not-leak-this" not in json.dumps(envelope)
    (curve,) = data["curves"]
    assert curve["name"] == "default" and curve["env"] == {} and "error" not in curve
    assert [point["size_bytes"] for point in curve["sweep"]] == plan["sizes_bytes"]
    for point in curve["sweep"]:
        assert point["verified"] is True and point["iterations"] >= 3
        assert point["busbw_gbps"] == point["algbw_gbps"] > 0  # 2 ranks: busbw = algbw
        assert point["algbw_gbps"] == pytest.approx(point["size_bytes"] / point["time_us"] / 1e3, rel=1e-4)
    assert curve["largest_bytes"] == MIB and curve["busbw_at_largest_gbps"] == curve["sweep"][-1]["busbw_gbps"]
    assert curve["peak_busbw_gbps"] == max(point["busbw_gbps"] for point in curve["sweep"])
    assert "unavailable" in curve["transports"] and curve["transport_lines"] == []
    assert isinstance(curve["knee"], dict) and curve["knee"]["startup_us"] > 0
    assert data["explanation"].startswith("gloo over loopback with 2 CPU ranks") and "not a GPU interconnect" in data["explanation"]
    assert data["topology"] == {"unavailable": "no GPU: the ranks are CPU processes on this host"}
    assert envelope["duration_s"] < 90


def test_runs_from_the_extracted_probe_archive(tmp_path):
    """As the engine runs it: collective.py and probelib/ extracted side by side; the workers import probelib from there."""
    import io  # pylint: disable=import-outside-toplevel
    import zipfile  # pylint: disable=import-outside-toplevel

    from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_archive import build_probe_archive  # pylint: disable=import-outside-toplevel

    payload, unused_sha = build_probe_archive("collective", ROOT)
    extracted = tmp_path / "extracted"
    zipfile.ZipFile(io.BytesIO(payload)).extractall(str(extracted))
    assert (extracted / "probe_packages" / "collective" / "worker.py").exists()
    out = tmp_path / "out.json"
    (tmp_path / "params.json").write_text(json.dumps(dict(FAST, cpu_max_bytes=4096)))
    env = dict(os.environ, TMPDIR=str(tmp_path))
    env.pop("PYTHONPATH", None)
    completed = subprocess.run([PYTHON, str(extracted / "collective.py"), "--params", str(tmp_path / "params.json"), "--out", str(out)],
                               cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=180, check=False)
    assert completed.returncode == 0, completed.stderr.decode()
    envelope = json.loads(out.read_text())
    validate(envelope)
    assert envelope["status"] == "ok", envelope["reason"]
    assert len(envelope["data"]["curves"][0]["sweep"]) == 10  # 8 B .. 4 KiB


def test_three_cpu_ranks_scale_busbw(tmp_path):
    envelope = run(tmp_path, dict(FAST, cpu_ranks=3, cpu_max_bytes=64 * 1024))
    validate(envelope)
    assert envelope["status"] == "ok", envelope["reason"]
    assert envelope["data"]["plan"]["world_size"] == 3
    for point in envelope["data"]["curves"][0]["sweep"]:
        assert point["verified"] and point["busbw_gbps"] == pytest.approx(point["algbw_gbps"] * 4 / 3, rel=1e-5)


def test_a_sweep_that_runs_past_curve_timeout_stops_and_keeps_what_it_measured(tmp_path):
    # at least 1000 timed calls per size cannot reach 64 MiB within 1 s: the ranks stop together between sizes
    envelope = run(tmp_path, dict(FAST, cpu_max_bytes=64 * MIB, min_iterations=1000, curve_timeout_s=1))
    validate(envelope)
    assert envelope["status"] == "partial", envelope["reason"]
    (curve,) = envelope["data"]["curves"]
    assert "the sweep passed curve_timeout_s (1 s) after" in curve["error"] and "raise curve_timeout_s" in curve["error"]
    assert 1 <= len(curve["sweep"]) < 24 and all(point["verified"] for point in curve["sweep"])
    assert envelope["data"]["errors"][0]["what"] == "timeout"
    # whichever rank notices first reports it: both stop at the same size
    assert re.match(r"failed: curve default, timeout: rank [01] failed during sweep: the sweep passed", envelope["reason"])


def test_bad_parameters_are_an_error_envelope(tmp_path):
    envelope = run(tmp_path, {"cpu_ranks": 1})
    assert envelope["status"] == "error" and "parameter 'cpu_ranks' must be >= 2, not 1" in envelope["reason"]
    envelope = run(tmp_path, {"max_bytes": 1001, "device": "gpu"})
    assert "parameter 'max_bytes' must be a multiple of 4, not 1001" in envelope["reason"]
    assert """parameter 'device' must be one of "auto", "cuda", "cpu", not 'gpu'""" in envelope["reason"]


def test_without_torch_it_is_unavailable(tmp_path):
    envelope = run(tmp_path, env=dict(os.environ, PYTHONPATH=shadow_module(tmp_path)))
    assert envelope["status"] == "unavailable" and "torch" in envelope["reason"]


def test_exactly_one_gpu_is_unavailable(monkeypatch):
    torch = pytest.importorskip("torch")
    import collective  # pylint: disable=import-outside-toplevel
    from probelib.measure import devices  # pylint: disable=import-outside-toplevel

    one = [{"kind": "cuda", "index": 0, "torch_device": "cuda:0", "name": "NVIDIA H200", "uuid": "GPU-1234",
            "memory_total_mib": 143771, "compute_capability": "9.0"}]
    monkeypatch.setattr(devices, "measured_devices", lambda unused_torch, unused_requested: one)
    result = collective.collect(dict(probe_defaults("collective")))
    assert result.status == "unavailable"
    assert result.reason == "1 GPU visible: an all-reduce needs at least 2 ranks"
    assert result.data["curves"] == [] and result.data["devices"] == [{"index": 0, "uuid": "GPU-1234", "name": "NVIDIA H200"}]
    assert result.data["plan"]["world_size"] == 1 and result.data["plan"]["backend"] == "nccl"
    schema_validator("collective.schema.json").validate(result.data)
    assert torch is not None


@pytest.mark.skipif(os.path.exists("/dev/nvidia0"), reason="this host has a GPU")
def test_device_cuda_without_a_gpu_is_unavailable(tmp_path):
    envelope = run(tmp_path, {"device": "cuda"})
    validate(envelope)
    assert envelope["status"] == "unavailable" and "sees no CUDA GPU" in envelope["reason"]


def synthetic_data():
    """A valid collective data member built from the probe's own pieces (no processes)."""
    from probe_packages.collective.plan import message_sizes  # pylint: disable=import-outside-toplevel
    from probe_packages.collective.stats import summarize_curve  # pylint: disable=import-outside-toplevel
    import collective  # pylint: disable=import-outside-toplevel

    sizes = message_sizes(64 * MIB)
    raw = [{"size_bytes": size, "time_s": 20e-6 + size / 300e9, "iterations": 10, "verified": True} for size in sizes]
    curve = {"name": "default", "env": {}, "transports": ["P2P/CUMEM"],
             "transport_lines": ["NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read"]}
    curve.update(summarize_curve(raw, 2))
    plan = collective.make_plan("nccl", "cuda", 2, sizes, dict(probe_defaults("collective")), {"NCCL_DEBUG": "INFO"})
    return {"method": collective.METHOD, "plan": plan, "devices": [{"index": 0, "uuid": "GPU-a", "name": "NVIDIA H200"}],
            "software": {"torch_version": "2.11.0", "nccl_version": "2.28.9", "backend": "nccl"},
            "environment_nccl": {"NCCL_NVLS_ENABLE": "0"}, "topology": {"source": "nvml", "link_classes": ["NV18"], "pairs": []},
            "curves": [curve], "explanation": "with P2P ...", "errors": []}


def test_schema_rejects_garbage():
    validator = schema_validator("collective.schema.json")
    data = synthetic_data()
    validator.validate(data)
    curve = data["curves"][0]
    bad_edits = [
        lambda d: d["environment_nccl"].update(HOME="/root"),            # not allow-listed
        lambda d: d["plan"]["worker_env_set"].update(PATH="/usr/bin"),
        lambda d: d["curves"][0].pop("knee"),                             # a measured curve without its knee
        lambda d: d["curves"][0]["sweep"][0].update(busbw_gbps=0),
        lambda d: d["curves"][0].update(name="sideways"),
        lambda d: d["curves"][0].update(transport_lines=["x"] * 21),
        lambda d: d["plan"].update(kind="tpu"),
        lambda d: d.update(surprise=1),
    ]
    for edit in bad_edits:
        broken = json.loads(json.dumps(data))
        edit(broken)
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(broken)
    failed = {"name": "p2p_disabled", "env": {"NCCL_P2P_DISABLE": "1"}, "sweep": [], "error": "rank 1 failed",
              "transports": {"unavailable": "no worker ran"}, "transport_lines": []}
    data["curves"].append(failed)
    validator.validate(data)
    assert curve["knee"]["knee_bytes"] > 0
