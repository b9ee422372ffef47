"""load on a real machine with NVIDIA GPUs (run on the device: python3 -m pytest -m gpu tests/gpu)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DURATION_S = 15


@pytest.fixture(scope="module")
def envelope(tmp_path_factory):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        pytest.skip("no CUDA GPU visible")
    folder = tmp_path_factory.mktemp("load")
    params_file, out = folder / "params.json", folder / "load.json"
    params_file.write_text(json.dumps({"duration_s": DURATION_S, "settle_s": 2}))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "load.py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=300)
    with open(out, encoding="utf-8") as handle:
        return json.load(handle)


def test_the_result_is_schema_valid(envelope):
    pytest.importorskip("jsonschema")
    for name, document in (("envelope", envelope), ("load", envelope["data"])):
        schema_validator(name + ".schema.json").validate(document)


def test_every_gpu_was_loaded_at_a_real_rate(envelope):
    torch = pytest.importorskip("torch")
    assert envelope["status"] == "ok", envelope["reason"]
    gpus = envelope["data"]["gpus"]
    assert len(gpus) == torch.cuda.device_count()
    for gpu in gpus:
        load = gpu["load"]
        assert load["output_finite"] is True and load["products"] > 0, gpu["index"]
        assert load["achieved_tflops"] > 100, (gpu["index"], load["achieved_tflops"])
        assert DURATION_S - 1 < load["end_s"] < DURATION_S + 10, (gpu["index"], load["end_s"])


def test_clocks_rose_and_samples_were_taken(envelope):
    data = envelope["data"]
    samples = data["samples"]
    interval = data["plan"]["sample_interval_s"]
    assert samples["rounds"] >= DURATION_S / interval * 0.8, samples["rounds"]
    assert samples["interval_s_actual"]["median"] == pytest.approx(interval, rel=0.2)
    for gpu in data["gpus"]:
        rows = samples["rows_per_gpu"][gpu["uuid"]]
        assert len(rows) == samples["rounds"]
        assert gpu["clocks"]["rose"] is True, gpu["clocks"]["note"]
        assert gpu["active"]["samples"] >= (DURATION_S - data["plan"]["warmup_s"]) / interval * 0.8
        assert gpu["active"]["gpu_util_pct"]["median"] >= 90, gpu["active"]["gpu_util_pct"]
        assert gpu["differences"]["active_minus_idle"]["power_w"] > 50, gpu["differences"]
        assert isinstance(gpu["power"]["limit_w"], float) and gpu["power"]["median_w"] > 0
        assert gpu["idle_after"]["t_s"] > gpu["load"]["end_s"]
    assert data["processes"]["rounds"] >= 2


def test_every_gpu_checked_its_products_bit_for_bit_and_they_agree(envelope):
    data = envelope["data"]
    digests = {}
    for gpu in data["gpus"]:
        correctness = gpu["correctness"]
        assert correctness["mode"] == "bitwise", (gpu["index"], correctness)  # cuBLAS is deterministic at rest here
        assert correctness["checks_run"] >= 10 and correctness["mismatching_checks"] == 0, (gpu["index"], correctness)
        # what the checks cost is a measurement held to its budget by benchmarks/load_check_cost.py, not asserted here
        assert isinstance(correctness["check_cost_pct"], float), (gpu["index"], correctness["check_cost_pct"])
        digests.setdefault((gpu["name"], correctness["multi_processor_count"]), set()).add(correctness["reference_sha256"])
    assert all(len(found) == 1 for found in digests.values()), digests


def test_an_injected_bit_flip_on_the_gpu_is_caught_with_the_gpu_the_product_and_the_magnitude(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        pytest.skip("no CUDA GPU visible")
    injection = {"gpu": 0, "check": 3, "element": 8192 + 1, "bit": 15}
    params_file, out = tmp_path / "params.json", tmp_path / "load.json"
    params_file.write_text(json.dumps({"duration_s": 8, "warmup_s": 2, "settle_s": 1, "inject_bit_flip": injection}))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "load.py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=300)
    with open(out, encoding="utf-8") as handle:
        data = json.load(handle)["data"]
    correctness = data["gpus"][0]["correctness"]
    assert correctness["injected"] == injection and correctness["mismatching_checks"] == 1, correctness
    (mismatch,) = correctness["mismatches"]
    assert mismatch["check"] == 3 and mismatch["product"] == 3 * data["plan"]["verify_every_checkpoints"] * 8
    assert mismatch["first_index"] == [1, 1] and mismatch["differing_elements"] == 1
    assert mismatch["first_got"] == -mismatch["first_expected"] and mismatch["max_abs_diff"] > 0  # the sign bit of a bf16
    for other in data["gpus"][1:]:
        assert other["correctness"]["mismatching_checks"] == 0, other["index"]
