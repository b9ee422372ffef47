"""Runs the gemm probe for real on this machine (the CPU path here) and checks its data against the schema."""
import sys
from functools import partial

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import assert_foreign_processes_recorded, assert_schema_header, probe_help, run_probe
from probelib.params import probe_defaults

_validator = partial(schema_validator, "gemm.schema.json")


def _run(tmp_path, params=None):
    return run_probe(tmp_path, "gemm", params)


def test_schema_header():
    assert_schema_header("gemm")


def test_help_works_without_running():
    completed = probe_help("gemm", python=sys.executable)
    assert completed.returncode == 0
    assert b"memory_bandwidth_gbps" in completed.stdout and b"peak_tflops" in completed.stdout


def test_probe_runs_here_and_matches_schema(tmp_path):
    pytest.importorskip("torch")
    envelope = _run(tmp_path)
    assert envelope["probe"] == "gemm" and envelope["status"] == "ok", envelope["reason"]
    data = envelope["data"]
    _validator().validate(data)
    assert_foreign_processes_recorded(data)
    assert envelope["environment"]["torch_version"]
    assert data["errors"] == []
    device = data["devices"][0]
    if device["device"]["kind"] != "cpu":
        pytest.skip("this machine has a GPU: the CPU assertions below do not apply")
    assert data["plan"]["name"] == "cpu-full"
    # How long the CPU path takes is a speed target: benchmarks/cpu_path_time.py prints it against its 60 s.
    assert device["dtypes"]["tf32"] == device["dtypes"]["fp16"] == device["dtypes"]["fp8_e4m3"] == {
        "unavailable": "no tensor cores on the CPU path"}
    roof = device["roofline"]
    assert roof["ridge_bandwidth_source"] == "own copy measurement" and roof["bandwidth_gbps"] > 0
    assert roof["own_copy"]["buffer_bytes"] == 64 * 2 ** 20
    names = [case["name"] for case in data["plan"]["cases"]]
    for dtype in ("fp32", "bf16"):
        entry = device["dtypes"][dtype]
        assert entry["roof_after_timing"]["peak_source"] == "best measured shape"
        assert entry["best"]["case"] in names + [data["plan"]["calibration_case"]]
        results = [result for result in device["results"] if result["dtype"] == dtype]
        assert [result["name"] for result in results] == names
        for result in results:
            measured = result["measurement"]
            assert measured["tflops"] > 0 and measured["output_finite"] and measured["output_nonzero"]
            assert len(measured["repeats_tflops"]) == 3
            assert sorted(measured["repeats_time_per_iteration_us"])[1] == measured["time_per_iteration_us"]
            assert result["classified_before_timing"]["classification"] in ("memory-bound", "compute-bound")
            explained = result["explained_after_timing"]
            assert explained["attainable_tflops"] <= entry["roof_after_timing"]["peak_tflops"]
            assert explained["explanation"].split(" % of its ")[0].isdigit()
        best = max(result["measurement"]["tflops"] for result in results)
        assert entry["roof_after_timing"]["peak_tflops"] >= best
        decode = next(result for result in results if result["name"] == "decode-mlp-up-m1-n3584-k1024")
        assert decode["arithmetic_intensity_flop_per_byte"] < 1.01  # M=1: about one FLOP per byte moved
        # The class follows the measured roofline. fp32 has hardware everywhere, so M=1 sits far below its ridge; bf16
        # on a CPU without bf16 instructions (this CI machine: 2.6 GFLOP/s, ridge 0.09 FLOP/byte) is compute-bound even
        # at M=1, and saying so is right.
        ridge = entry["roof_after_timing"]["ridge_flop_per_byte"]
        expected = "memory-bound" if decode["arithmetic_intensity_flop_per_byte"] < ridge else "compute-bound"
        assert decode["explained_after_timing"]["classification"] == expected
        if dtype == "fp32":
            assert expected == "memory-bound"


def test_quick_with_given_shapes_and_bandwidth(tmp_path):
    pytest.importorskip("torch")
    envelope = _run(tmp_path, {"quick": True, "memory_bandwidth_gbps": 20, "repeats": 1,
                               "shapes": [{"name": "tiny-decode", "m": 4, "n": 512, "k": 256}]})
    data = envelope["data"]
    _validator().validate(data)
    assert data["plan"]["quick"] is True and data["plan"]["dtypes"] == ["bf16"]
    device = data["devices"][0]
    assert [result["name"] for result in device["results"]] == [data["plan"]["cases"][0]["name"], "tiny-decode"]
    assert device["roofline"]["bandwidth_gbps"] == 20 and device["roofline"]["ridge_bandwidth_source"] == \
        "parameter memory_bandwidth_gbps"
    assert set(device["dtypes"]) == {"bf16"}
    assert all(len(result["measurement"]["repeats_tflops"]) == 1 for result in device["results"])


@pytest.mark.parametrize("params, message", [
    ({"dtypes": ["fp64"]}, "unknown dtype"),
    ({"peak_tflops": {"fp8": 1979}}, "peak_tflops names unknown dtype"),
    ({"memory_bandwidth_gbps": -5}, "memory_bandwidth_gbps must be"),
])
def test_bad_parameters(params, message):
    import gemm
    from probelib.runner import ParameterError
    values = dict(probe_defaults("gemm"))
    values.update(params)
    with pytest.raises(ParameterError, match=message):
        gemm.check_params(values)


def test_bad_shapes_are_an_error_envelope(tmp_path):
    pytest.importorskip("torch")
    envelope = _run(tmp_path, {"shapes": [{"name": "x", "m": 0, "n": 1, "k": 1}]})
    assert envelope["status"] == "error"
    assert envelope["reason"] == "bad parameters: shapes[0].m must be a positive integer (got 0)"
