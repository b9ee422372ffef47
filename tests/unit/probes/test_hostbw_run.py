"""Runs the hostbw probe for real on this machine (the CPU path here) and checks its envelope against the schema."""
import os
from functools import partial

import jsonschema
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import assert_foreign_processes_recorded, assert_schema_header, probe_help, run_probe, shadow_module

_validator = partial(schema_validator, "hostbw.schema.json")


def _run(tmp_path, params=None, env=None):
    return run_probe(tmp_path, "hostbw", params, env, timeout=120)


def test_schema_header():
    assert_schema_header("hostbw")


def test_probe_runs_here_and_matches_schema(tmp_path):
    envelope = _run(tmp_path)
    assert envelope["probe"] == "hostbw" and envelope["status"] in ("ok", "partial")
    data = envelope["data"]
    _validator().validate(data)
    assert_foreign_processes_recorded(data)
    assert data["errors"] == []
    assert "torch_version" in envelope["environment"]
    assert envelope["duration_s"] < 60
    together = data["together"]  # issue 35: one device and one worker: not run, and why; more: every device at once
    assert "and workers_per_gpu 1: every" in together["unavailable"] if "unavailable" in together else len(together["workers"]) > 1
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
    _validator().validate(data)
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
    env = dict(os.environ, PYTHONPATH=shadow_module(tmp_path))
    envelope = _run(tmp_path, env=env)
    assert envelope["status"] == "unavailable" and "torch" in envelope["reason"]
    completed = probe_help("hostbw", env)
    assert completed.returncode == 0 and b"pinned" in completed.stdout


def test_schema_rejects_garbage(tmp_path):
    data = _run(tmp_path, {"quick": True, "cpu_buffer_mib": 8})["data"]
    validator = _validator()
    validator.validate(data)
    result = data["devices"][0]["results"][0]
    for key, value in (("median_gbps", 0), ("median_gbps", "fast"), ("direction", "sideways"), ("cv_pct", {"unavailable": ""})):
        saved = result[key]
        result[key] = value
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(data)
        result[key] = saved
    data["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
