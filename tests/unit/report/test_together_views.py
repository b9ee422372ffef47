"""The together tables of the gemm and fusion dossier sections (issue 35): the node's number (every GPU at once) beside
the alone number and its share per worker; a phase that did not run says why; an older result shows no such table."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.fusion.view import fusion_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.gemm.view import gemm_section
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.shared.together_view import device_sharers, expected_share

ONE_GPU = {"unavailable": "one GPU and workers_per_gpu 1: every GPU at once is this GPU alone, measured in the alone phase"}
WINDOW = {"window_s": 10.0, "reasons": {"sw_power_cap": {"ns": 9 * 10 ** 9, "s": 9.0, "source": "nvmlDeviceGetFieldValues x", "share_pct": 90.0},
                                        "hw_power_brake_slowdown": {"ns": 3 * 10 ** 9, "s": 3.0, "source": "nvmlDeviceGetFieldValues y",
                                                                    "share_pct": 30.0}}}


def worker(index, device_index, sharers, result=None, status="ok"):
    entry = {"worker": index, "kind": "cuda", "device_index": device_index, "slot": index % sharers, "workers_on_device": sharers,
             "status": status, "start_lag_ms": 0.2, "duration_s": 12.0}
    if status == "ok":
        entry["result"] = result
    else:
        entry["error"] = "killed at the deadline"
    return entry


def phase(workers, alone):
    return {"method": "m", "workers": workers, "released_together": True, "start_spread_ms": 0.8, "wall_s": 20.0,
            "alone_reference": alone}


def rows(view, title_start):
    (found,) = [entry for entry in view["tables"] if entry["title"].startswith(title_start)]
    return found, [[cell.text for cell in row] for row in found["rows"]]


def test_gemm_shows_each_workers_sustained_rate_beside_the_alone_one_and_its_slowdown_time():
    sustained = {"bf16": {"tflops": 325.0, "sm_clock_mhz_median": 1755.0, "power_w_median": 699.0}}
    data = {"devices": [], "together": phase(
        [worker(0, 0, 2, {"sustained": sustained, "clock_event_durations_window": WINDOW}),
         worker(1, 0, 2, status="error")],
        {"device_index": 0, "source": "s", "sustained": {"bf16": {"tflops": 662.97}}})}
    view = gemm_section(data)
    found, texts = rows(view, "Sustained, every GPU at once beside the first GPU alone")
    assert "released together, start spread 0.8 ms" in found["title"]
    assert texts[0] == ["GPU 0 worker 0", "bf16", "325 TFLOP/s", "663 TFLOP/s", "331 TFLOP/s", "98 %", "1755 MHz", "699 W"]
    assert texts[1][:2] == ["GPU 0 worker 1", "failed"]
    found, texts = rows(view, "Time in each clock-event reason during each worker's together window")
    assert texts[0][:2] == ["GPU 0 worker 0", "10 s"] and "3 s (30 %)" in texts[0]
    assert found["rows"][0][texts[0].index("3 s (30 %)")].flag == "bad"


def test_gemm_says_why_the_phase_did_not_run_and_an_older_result_has_no_together_table():
    found, texts = rows(gemm_section({"devices": [], "together": ONE_GPU}), "Sustained, every GPU at once")
    assert texts == [] and found["empty"] == "the together phase did not run: " + ONE_GPU["unavailable"]
    assert not [entry for entry in gemm_section({"devices": []})["tables"] if "every GPU at once" in entry["title"]]


def test_fusion_shows_each_workers_bandwidth_beside_the_alone_one():
    alone = {"device_index": 0, "elements": 268435456, "unfused_achieved_gbps": 4000.0, "fused_achieved_gbps": 4200.0,
             "measured_speedup": 2.46}
    result = dict(alone, unfused_achieved_gbps=3900.0, fused_achieved_gbps=2100.0, measured_speedup=1.3)
    view = fusion_view({"devices": [], "together": phase([worker(0, 0, 1, result), worker(1, 1, 1, result)], alone)})
    unused_found, texts = rows(view, "Every GPU at once beside the first GPU alone")
    assert texts[1] == ["GPU 1 worker 1", "268435456", "3900 GB/s", "4000 GB/s", "4000 GB/s", "97.5 %", "2100 GB/s",
                        "4200 GB/s", "4200 GB/s", "50 %", "1.3x", "2.46x"]
    assert not [entry for entry in fusion_view({"devices": []})["tables"] if "every GPU at once" in entry["title"].lower()]


@pytest.mark.parametrize("recorded, sharers", [(2, 2), (1, 1), (None, 1), (0, 1), (-3, 1), (True, 1), ("2", 1)])
def test_a_workers_sharers_come_from_one_place_and_a_bad_count_is_one(recorded, sharers):
    entry = {"workers_on_device": recorded}
    assert device_sharers(entry) == sharers
    assert expected_share(100.0, entry) == 100.0 / sharers
