"""Runs the load probe for real on this machine and checks its envelope against the envelope and load schemas.

Without a GPU (this CPU-only machine) the probe is unavailable, says why (and, without nvidia-ml-py, how to install it),
runs no load, and still writes schema-valid data."""
import json
import os
import subprocess
import sys

import jsonschema

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROBE = os.path.join(ROOT, "probes", "load.py")
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
PYTHON = VENV_PYTHON if os.path.exists(VENV_PYTHON) else sys.executable


def _schema(name):
    with open(os.path.join(ROOT, "schemas", name), encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _validate(envelope):
    jsonschema.Draft202012Validator(_schema("envelope.schema.json")).validate(envelope)
    jsonschema.Draft202012Validator(_schema("load.schema.json")).validate(envelope["data"])


def _run(tmp_path, params=None, env=None, timeout=300):
    out = tmp_path / "load.json"
    command = [PYTHON, PROBE, "--out", str(out)]
    if params is not None:
        params_file = tmp_path / "params.json"
        params_file.write_text(json.dumps(params))
        command += ["--params", str(params_file)]
    completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, check=False, env=env)
    assert completed.returncode == 0, completed.stderr.decode()
    return json.loads(out.read_text())


def test_schema_header():
    schema = _schema("load.schema.json")
    assert schema["$id"] == "load.schema.json" and schema["title"]
    assert schema["$defs"]["unavailable"] == {
        "type": "object", "required": ["unavailable"],
        "properties": {"unavailable": {"type": "string", "minLength": 1}}, "additionalProperties": False}


def test_probe_runs_here_and_matches_the_schemas(tmp_path):
    envelope = _run(tmp_path, {"quick": True})
    _validate(envelope)
    assert envelope["probe"] == "load" and "torch_version" in envelope["environment"]
    data = envelope["data"]
    assert data["plan"]["duration_s"] == 20.0 and data["plan"]["dtype"] == "bf16"
    if envelope["status"] == "unavailable":
        reason = envelope["reason"]
        assert reason and ("torch sees no CUDA GPU" in reason or "NVML is not usable" in reason)
        try:
            import pynvml  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
        except ImportError:
            assert "pip install nvidia-ml-py" in reason
        assert data["samples"] == {"unavailable": reason} and data["processes"] == {"unavailable": reason}
        assert data["errors"] == [] and data["cooldown"]["waited_s"] == 0
        assert envelope["duration_s"] < 30
    else:
        assert envelope["status"] == "ok", envelope["reason"]
        assert all(gpu["load"]["products"] > 0 for gpu in data["gpus"])


def test_bad_parameters_are_an_error_envelope(tmp_path):
    for params, word in (({"duration_s": "long"}, "duration_s"), ({"sample_interval_s": 0}, "sample_interval_s"),
                         ({"warmup_s": 30, "quick": True}, "warmup_s"), ({"gpus": [0]}, "unknown parameter 'gpus'")):
        envelope = _run(tmp_path, params)
        assert envelope["status"] == "error" and word in envelope["reason"], envelope["reason"]
        jsonschema.Draft202012Validator(_schema("envelope.schema.json")).validate(envelope)


def test_without_torch_it_is_unavailable_and_help_still_works(tmp_path):
    shadow = tmp_path / "shadow" / "torch"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no torch in this test')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "shadow"))
    envelope = _run(tmp_path, env=env)
    assert envelope["status"] == "unavailable" and "torch" in envelope["reason"] and envelope["data"] == {}
    jsonschema.Draft202012Validator(_schema("envelope.schema.json")).validate(envelope)
    completed = subprocess.run([PYTHON, PROBE, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                               check=False, env=env)
    assert completed.returncode == 0
    for word in ("duration_s", "sample_interval_s", "process_interval_s", "warmup_s", "settle_s", "cooldown_s", "matmul_n",
                 "dtype", "clock_rise_mhz", "power_margin_pct", "quick"):
        assert word.encode() in completed.stdout, word
