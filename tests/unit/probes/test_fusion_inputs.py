"""The fusion declaration: where it runs, and the membw bandwidth it takes from the same run's stored membw result."""
import json
import os
import shutil

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.fusion.derived import NO_MEMBW_RESULT
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declaration, judging_of, sections, with_derived_params

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RIG_MEMBW = os.path.join(ROOT, "docs", "examples", "h200x2", "20261130T035514Z-509823", "localhost", "membw.json")


def _no_baselines():
    raise AssertionError("fusion derives nothing from the baselines")


def fusion_inputs(host_dir, params):
    """fusion's derivation as the probe action runs it: the core hands it what membw gives."""
    return with_derived_params("fusion", str(host_dir), params, _no_baselines)


def test_it_runs_after_membw_and_before_gemm_and_judges_its_together_phase_only():
    found = declaration("fusion")
    assert declaration("membw").run_order < found.run_order == 35 < declaration("gemm").run_order
    assert dict(found.profiles) == {"acceptance": {}, "full": {"alone_devices": "all"}} and found.timeout_s == 300
    assert found.needs == ("membw",) and declaration("membw").gives is not None
    assert not found.judges_nothing and set(judging_of("fusion").checks) == {"together_bandwidth"} and "fusion" in sections()


def test_the_membw_headline_of_each_gpu_is_handed_over(tmp_path):
    shutil.copy(RIG_MEMBW, tmp_path / "membw.json")
    params, notes = with_derived_params("fusion", str(tmp_path), {"quick": True}, _no_baselines)
    assert params["quick"] is True
    bandwidths = params["membw_bandwidth_gbps"]
    assert all(key.startswith("GPU-") for key in bandwidths) and sorted(bandwidths.values()) == [4244.4, 4246.29]
    assert params["membw_bandwidth_source"] == "this run's membw headline bandwidth (from: plateau)"
    assert notes == ["membw_bandwidth_gbps from this run's membw result"]


def test_without_membw_the_reason_is_handed_over_instead(tmp_path):
    params, notes = fusion_inputs(tmp_path, {})
    assert "membw_bandwidth_gbps" not in params and params["membw_bandwidth_source"] == NO_MEMBW_RESULT
    assert notes == [NO_MEMBW_RESULT]


def test_a_membw_that_failed_hands_over_no_bandwidth(tmp_path):
    with open(RIG_MEMBW, encoding="utf-8") as handle:
        envelope = json.load(handle)
    envelope["status"] = "error"
    (tmp_path / "membw.json").write_text(json.dumps(envelope))
    assert fusion_inputs(tmp_path, {})[0]["membw_bandwidth_source"] == NO_MEMBW_RESULT


def test_a_membw_result_without_a_headline_says_so(tmp_path):
    with open(RIG_MEMBW, encoding="utf-8") as handle:
        envelope = json.load(handle)
    for entry in envelope["data"]["devices"]:
        entry["headline"]["bandwidth_gbps"] = {"unavailable": "no size was measured"}
    (tmp_path / "membw.json").write_text(json.dumps(envelope))
    params, unused_notes = fusion_inputs(tmp_path, {})
    assert "membw_bandwidth_gbps" not in params
    assert params["membw_bandwidth_source"].startswith("this run's membw result has no headline bandwidth")
    assert "no size was measured" in params["membw_bandwidth_source"]


def test_what_the_user_gave_wins(tmp_path):
    shutil.copy(RIG_MEMBW, tmp_path / "membw.json")
    assert fusion_inputs(tmp_path, {"membw_bandwidth_gbps": 3000.0}) == ({"membw_bandwidth_gbps": 3000.0}, [])
