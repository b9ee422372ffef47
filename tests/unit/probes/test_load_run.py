"""Runs the load probe for real on this machine and checks its envelope against the envelope and load schemas.

Without a GPU (this CPU-only machine) the probe is unavailable, says why (and, without nvidia-ml-py, how to install it),
runs no load, and still writes schema-valid data."""
import os

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import assert_foreign_processes_recorded, assert_schema_header, probe_help, run_probe, shadow_module, validate_envelope


def _run(tmp_path, params=None, env=None):
    return run_probe(tmp_path, "load", params, env)


def test_schema_header():
    assert_schema_header("load")


def test_probe_runs_here_and_matches_the_schemas(tmp_path):
    envelope = _run(tmp_path, {"quick": True})
    validate_envelope(envelope, "load")
    assert envelope["probe"] == "load" and "torch_version" in envelope["environment"]
    data = envelope["data"]
    assert_foreign_processes_recorded(data)
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
        schema_validator("envelope.schema.json").validate(envelope)


def test_without_torch_it_is_unavailable_and_help_still_works(tmp_path):
    env = dict(os.environ, PYTHONPATH=shadow_module(tmp_path))
    envelope = _run(tmp_path, env=env)
    assert envelope["status"] == "unavailable" and "torch" in envelope["reason"] and envelope["data"] == {}
    schema_validator("envelope.schema.json").validate(envelope)
    completed = probe_help("load", env)
    assert completed.returncode == 0
    for word in ("duration_s", "sample_interval_s", "process_interval_s", "warmup_s", "settle_s", "cooldown_s", "matmul_n",
                 "dtype", "clock_rise_mhz", "power_margin_pct", "quick"):
        assert word.encode() in completed.stdout, word
