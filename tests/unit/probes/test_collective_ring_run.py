"""The ring prediction in the collective probe's result: the CPU path run for real with 2 and 4 ranks, one GPU faked."""
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.collective.view import collective_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems, schema_validator
from probe_runs import run_probe
from probelib.params import probe_defaults

MIB = 1 << 20
FAST = {"device": "cpu", "cpu_max_bytes": MIB, "target_time_per_size_s": 0.01, "warmup": 2, "min_iterations": 3}


def test_four_cpu_ranks_measure_the_two_and_four_rank_rings(tmp_path):
    envelope = run_probe(tmp_path, "collective", dict(FAST, cpu_ranks=4), dict(os.environ, TMPDIR=str(tmp_path)), 240)
    assert envelope_problems(envelope) == []
    assert envelope["status"] == "ok", envelope["reason"]
    data = envelope["data"]
    prediction = data["prediction"]
    assert prediction["message_bytes"] == MIB and prediction["stated"].startswith("stated before the measurement")
    assert [entry["traffic_ratio_to_2"] for entry in prediction["world_sizes"]] == [1.0, 1.5, 1.75]
    assert [entry["measurable"] for entry in prediction["world_sizes"][:2]] == [True, True]
    assert prediction["world_sizes"][2]["measurable"] == {"unavailable": "needs 8 CPU ranks, cpu_ranks is 4"}
    (ring_2,) = data["ring_curves"]
    assert ring_2["name"] == "ring_2" and ring_2["world_size"] == 2 and ring_2["env"] == {}
    assert [point["size_bytes"] for point in ring_2["sweep"]] == [MIB // 4, MIB // 2, MIB]
    assert all(point["verified"] for point in ring_2["sweep"])
    assert [curve["name"] for curve in data["curves"]] == ["default"] and len(data["curves"][0]["sweep"]) == 18
    two, four, eight = data["ring_comparison"]
    assert two["measured"]["curve"] == "ring_2" and four["measured"]["curve"] == "default"
    assert four["measured_time_ratio_to_2"] > 0 and "no link rate to predict from" in four["sentence"]
    assert eight["measured"] == {"unavailable": "needs 8 CPU ranks, cpu_ranks is 4"}
    view = collective_view(data)
    ring_table = next(table for table in view["tables"] if table["title"].startswith("The ring, predicted"))
    assert len(ring_table["rows"]) == 3 and ring_table["rows"][2][6].text == "n/a"


def test_two_cpu_ranks_predict_four_and_eight_as_not_measurable(tmp_path):
    envelope = run_probe(tmp_path, "collective", FAST, dict(os.environ, TMPDIR=str(tmp_path)), 180)
    assert envelope_problems(envelope) == []
    data = envelope["data"]
    assert data["ring_curves"] == []
    assert [entry["measured"].get("curve", entry["measured"].get("unavailable")) for entry in data["ring_comparison"]] == [
        "default", "needs 4 CPU ranks, cpu_ranks is 2", "needs 8 CPU ranks, cpu_ranks is 2"]


def test_one_gpu_shows_the_prediction_with_every_world_size_not_measurable(monkeypatch):
    pytest.importorskip("torch")
    import collective  # pylint: disable=import-outside-toplevel
    from probelib.measure import devices  # pylint: disable=import-outside-toplevel

    one = [{"kind": "cuda", "index": 0, "torch_device": "cuda:0", "name": "NVIDIA H200", "uuid": "GPU-1234",
            "memory_total_mib": 143771, "compute_capability": "9.0"}]
    monkeypatch.setattr(devices, "measured_devices", lambda unused_torch, unused_requested: one)
    result = collective.collect(dict(probe_defaults("collective")))
    assert result.status == "unavailable"
    schema_validator("collective.schema.json").validate(result.data)
    prediction = result.data["prediction"]
    assert prediction["message_bytes"] == 1 << 30
    assert [entry["measurable"]["unavailable"] for entry in prediction["world_sizes"]] == [
        "needs 2 GPUs, this host has 1", "needs 4 GPUs, this host has 1", "needs 8 GPUs, this host has 1"]
    assert [entry["per_rank_bytes"] for entry in prediction["world_sizes"]] == [1 << 30, 3 << 29, 7 << 28]
    view = collective_view(result.data)
    ring_table = next(table for table in view["tables"] if table["title"].startswith("The ring, predicted"))
    assert [row[0].text for row in ring_table["rows"]] == ["2", "4", "8"]
    assert "needs 2 GPUs" in ring_table["rows"][0][6].note


def test_results_recorded_before_the_prediction_show_no_ring_table():
    view = collective_view({"curves": [], "plan": {}})
    assert not any(table["title"].startswith("The ring") for table in view["tables"])
