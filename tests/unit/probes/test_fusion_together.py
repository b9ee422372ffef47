"""fusion's together phase on the CPU path, for real: two worker processes on the one CPU "device" (workers_per_gpu 2),
each compiling and checking the chain before the common start and timing it after, at the alone phase's largest size;
the worker's size choice and headline numbers as data."""
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_runs import run_probe
from probe_packages.fusion import together
from probe_packages.fusion.together_worker import size_for

PARAMS = {"device": "cpu", "sizes_elements": [4096, 32768], "repeats": 2, "membw_bandwidth_gbps": {"cpu": 20.0},
          "membw_bandwidth_source": "test: membw 20 GB/s"}


def test_two_workers_on_the_cpu_run_the_chain_together(tmp_path):
    pytest.importorskip("torch")
    envelope = run_probe(tmp_path, "fusion", dict(PARAMS, workers_per_gpu=2), timeout=280, python=sys.executable)
    data = envelope["data"]
    schema_validator("fusion.schema.json").validate(data)
    assert envelope["status"] in ("ok", "partial"), envelope["reason"]
    phase = data["together"]
    assert [(entry["worker"], entry["kind"], entry["slot"], entry["workers_on_device"], entry["status"])
            for entry in phase["workers"]] == [(0, "cpu", 0, 2, "ok"), (1, "cpu", 1, 2, "ok")], phase["workers"]
    (alone,) = data["devices"]
    largest = max(point["elements"] for point in alone["points"] if point["status"] == "measured")
    reference = phase["alone_reference"]
    assert reference["device_index"] == 0 and reference["elements"] == largest == 32768
    point = next(point for point in alone["points"] if point["elements"] == largest)
    assert reference["unfused_achieved_gbps"] == point["unfused"]["achieved_gbps"]
    for entry in phase["workers"]:
        result = entry["result"]
        assert result["elements"] == largest and result["unfused_achieved_gbps"] > 0
        assert result["share"]["workers_on_device"] == 2


def test_a_phase_that_did_not_run_adds_no_error_and_one_that_raised_adds_one(monkeypatch):
    assert together.together_entries({"unavailable": "one GPU and workers_per_gpu 1: ..."}) == []

    def broken(*unused, **unused_named):
        raise OSError("No space left on device: '/tmp/gpufleet-together-x'")
    monkeypatch.setattr(together, "run_together", broken)
    devices = [{"kind": "cpu", "index": 0}]
    plan = {"sizes_elements": [4096], "repeats": 2, "target_point_ms": 10.0}
    params = {"workers_per_gpu": 2, "membw_bandwidth_gbps": None, "membw_bandwidth_source": ""}
    record = together.guarded_phase(devices, plan, params, [])
    assert record == {"unavailable": "the together phase failed: OSError: No space left on device: '/tmp/gpufleet-together-x'"}
    failed = together.together_entries(record, "cpu", 0)
    assert together.worker_errors(failed) == [
        {"device": "cpu:0", "error": "together phase: OSError: No space left on device: '/tmp/gpufleet-together-x'"}]


def test_a_worker_takes_the_alone_size_when_it_fits_its_share_else_the_largest_that_does():
    plan = {"sizes_elements": [1 << 20, 1 << 24, 1 << 28], "element_bytes": 2, "safety_margin_mib": 512.0, "safety_margin_pct": 5.0}
    assert size_for(plan, 1 << 28, 70 * 2 ** 30) == 1 << 28
    assert size_for(plan, 1 << 28, 2 * 2 ** 30) == 1 << 24  # 9 x 2^28 x 2 B = 4.5 GiB does not fit a 2 GiB share
    assert size_for(plan, 1 << 28, 1) == 1 << 20  # nothing fits: the smallest, whose run then says why it was skipped


def test_the_headline_of_a_point_whose_fused_version_failed():
    point = {"elements": 4096, "unfused": {"achieved_gbps": 12.0, "time_per_iteration_s": 0.001},
             "fused": {"unavailable": "compile failed: no C++ compiler"}, "measured_speedup": {"unavailable": "no fused"}}
    assert together.headline(point) == {
        "elements": 4096, "unfused_achieved_gbps": 12.0, "unfused_time_per_iteration_s": 0.001,
        "fused_achieved_gbps": {"unavailable": "compile failed: no C++ compiler"},
        "fused_time_per_iteration_s": {"unavailable": "compile failed: no C++ compiler"},
        "measured_speedup": {"unavailable": "no fused"}}
    failed = {"workers": [{"worker": 1, "kind": "cuda", "device_index": 2, "status": "error", "error": "killed"}]}
    assert together.together_entries(failed) == [{"device": {"kind": "cuda", "index": 2, "name": "together worker 1"},
                                                  "status": "error", "error": {"message": "killed"}, "problems": []}]
