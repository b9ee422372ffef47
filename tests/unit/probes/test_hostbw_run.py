"""Runs the hostbw probe for real on this machine (the CPU path here) and checks its envelope against the schema."""
import json
import os
import subprocess
import sys

import jsonschema
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROBE = os.path.join(ROOT, "probes", "hostbw.py")
SCHEMA = os.path.join(ROOT, "schemas", "hostbw.schema.json")
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
PYTHON = VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable


def _schema():
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _run(tmp_path, params=None, env=None, timeout=120):
    out = tmp_path / "hostbw.json"
    command = [PYTHON, PROBE, "--out", str(out)]
    if params is not None:
        params_file = tmp_path / "params.json"
        params_file.write_text(json.dumps(params))
        command += ["--params", str(params_file)]
    completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, check=False, env=env)
    assert completed.returncode == 0, completed.stderr.decode()
    return json.loads(out.read_text())


def test_schema_header():
    schema = _schema()
    assert schema["$id"] == "hostbw.schema.json" and schema["title"]
    assert schema["$defs"]["unavailable"] == {
        "type": "object", "required": ["unavailable"],
        "properties": {"unavailable": {"type": "string", "minLength": 1}}, "additionalProperties": False}


def test_probe_runs_here_and_matches_schema(tmp_path):
    envelope = _run(tmp_path)
    assert envelope["probe"] == "hostbw" and envelope["status"] in ("ok", "partial")
    data = envelope["data"]
    jsonschema.validate(data, _schema())
    assert data["errors"] == []
    assert "torch_version" in envelope["environment"]
    assert envelope["duration_s"] < 60
    for device in data["devices"]:
        assert device["kind"] in ("cuda", "cpu")
        for result in device["results"]:
            assert result["median_gbps"] > 0 and all(rate > 0 for rate in result["repeats_gbps"])
            assert min(result["repeats_gbps"]) <= result["median_gbps"] <= max(result["repeats_gbps"])
            assert result["data_check"] == {"checked_elements": 4096, "mismatched_elements": 0, "ok": True}
            assert result["bytes_per_copy"] == device["buffer"]["bytes"]
    if data["devices"][0]["kind"] == "cpu":
        device = data["devices"][0]
        assert data["plan"]["name"] == "cpu"
        assert [(result["direction"], result["host_memory"]) for result in device["results"]] == [("h2h", "pageable")]
        assert "not PCIe" in device["results"][0]["note"] and envelope["reason"] == ""
        assert device["buffer"]["used_mib"] == 64 and device["results"][0]["copies_per_repeat"] == 10
        assert device["locality"]["cpus_used"] == sorted(os.sched_getaffinity(0))


def test_quick_mode(tmp_path):
    envelope = _run(tmp_path, {"quick": True, "cpu_buffer_mib": 16, "repeats": 2})
    data = envelope["data"]
    jsonschema.validate(data, _schema())
    assert data["plan"]["quick"] is True
    if data["devices"][0]["kind"] == "cpu":
        assert data["plan"]["name"] == "cpu_quick"
        assert data["devices"][0]["buffer"]["used_mib"] == 16
        assert len(data["devices"][0]["results"][0]["repeats_gbps"]) == 2


def test_bad_parameters_are_an_error_envelope(tmp_path):
    envelope = _run(tmp_path, {"buffer_mib": "big"})
    assert envelope["status"] == "error" and "buffer_mib" in envelope["reason"]
    envelope = _run(tmp_path, {"iterations": 0})
    assert envelope["status"] == "error" and "iterations" in envelope["reason"]


def test_without_torch_it_is_unavailable_and_help_still_works(tmp_path):
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no torch in this test')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "shadow"))
    envelope = _run(tmp_path, env=env)
    assert envelope["status"] == "unavailable" and "torch" in envelope["reason"]
    completed = subprocess.run([PYTHON, PROBE, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                               check=False, env=env)
    assert completed.returncode == 0 and b"pinned" in completed.stdout


def test_schema_rejects_garbage(tmp_path):
    data = _run(tmp_path, {"quick": True, "cpu_buffer_mib": 8})["data"]
    schema = _schema()
    jsonschema.validate(data, schema)
    result = data["devices"][0]["results"][0]
    for key, value in (("median_gbps", 0), ("median_gbps", "fast"), ("direction", "sideways"), ("cv_pct", {"unavailable": ""})):
        saved = result[key]
        result[key] = value
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(data, schema)
        result[key] = saved
    data["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)
