"""Runs the health probe for real on this machine and checks its envelope against the schema."""
import importlib.util
import json
import os
import re
import shutil
import sys
from functools import partial

import jsonschema
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import assert_schema_header, run_probe

H200_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "health_h200x2_ok_by_hand_anonymised.json")
_validator = partial(schema_validator, "health.schema.json")


def test_schema_header():
    assert_schema_header("health")


def test_probe_runs_here_and_matches_schema(tmp_path):
    envelope = run_probe(tmp_path, "health", {"cuda_init_timeout_s": 60}, python=sys.executable)
    assert envelope["probe"] == "health"
    _validator().validate(envelope["data"])
    platform = envelope["data"]["platform"]
    assert platform["hostname"] and platform["kernel_release"] == os.uname().release
    assert isinstance(platform["memory_total_mib"], int) and platform["memory_total_mib"] > 0
    assert envelope["data"]["errors"] == []
    if importlib.util.find_spec("pynvml") is None or shutil.which("nvidia-smi") is None:
        assert envelope["status"] == "unavailable"
        assert re.search(r"nvidia-ml-py|NVML|driver|no GPU", envelope["reason"])
        assert set(envelope["data"]["gpus"]) == {"unavailable"}
    for key in ("driver_version", "torch_version"):
        assert not isinstance(envelope["environment"].get(key), dict)


def test_schema_rejects_garbage():
    validator = _validator()
    with open(H200_FIXTURE, encoding="utf-8") as handle:
        data = json.load(handle)["data"]
    data["gpus"][0]["memory"]["total_mib"] = "lots"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
    data["gpus"][0]["memory"]["total_mib"] = 143771
    data["gpus"][0]["power"]["draw_w"] = {"unavailable": ""}
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
    data["gpus"][0]["power"]["draw_w"] = 84.2
    data["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


def test_real_h200_output_matches_schema():
    with open(H200_FIXTURE, encoding="utf-8") as handle:
        envelope = json.load(handle)
    data = envelope["data"]
    _validator().validate(data)
    assert envelope["status"] == "ok"
    assert [gpu["name"] for gpu in data["gpus"]] == ["NVIDIA H200", "NVIDIA H200"]
    assert data["gpus"][0]["retired_pages"] == {"unavailable": "not supported by this GPU (NVML: Not Supported)"}
    assert data["topology"]["pairs"][0]["link_class"] == "NV18"
    assert data["device_nodes"]["mismatches"] == []
