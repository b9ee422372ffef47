"""The fusion probe's dossier section over a result shaped as the probe records it on a GPU."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.fusion.view import COLUMNS, fusion_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_problems
import fusion
from probe_packages.fusion import traffic
from probe_packages.fusion.plan import resolve_plan
from probe_packages.fusion.summary import speedups, unmeasured_point, verification_record, version_record
from probelib.params import probe_defaults

PLAN = resolve_plan(dict(probe_defaults("fusion")), "cuda")
GPU = {"kind": "cuda", "index": 0, "name": "NVIDIA H200", "uuid": "GPU-1e49e0ec", "memory_total_mib": 143771,
       "compute_capability": "9.0"}


def point(elements, unfused_s, fused_s):
    unfused = version_record("unfused", elements, 2, 100, [unfused_s], 4246.29, "")
    fused = version_record("fused", elements, 2, 100, [fused_s], 4246.29, "")
    record = {"elements": elements, "status": "measured", "reason": "", "unfused": unfused, "fused": fused,
              "compile": {"compile_s": 1.5, "generated_kernels": 1},
              "verification": verification_record("bfloat16", 0.0078125, True)}
    record.update(speedups(unfused, fused, PLAN, "cuda", 50 << 20))
    return record


def data():
    points = [point(1 << 20, 4 * 6e-6, 9e-6), point(1 << 28, 1.5e-3, 0.70e-3),
              unmeasured_point(1 << 30, "skipped", "too big for this GPU", "bfloat16")]
    entry = {"device": GPU, "status": "ok", "error": None, "problems": [], "membw_bandwidth_gbps": 4246.29,
             "membw_bandwidth_source": "this run's membw headline bandwidth (from: plateau)", "triton_version": "3.4.0",
             "last_level_cache_bytes": 50 << 20, "points": points}
    return {"method": fusion.method_of("cuda"), "traffic": traffic.accounting(), "plan": PLAN, "devices": [entry],
            "errors": []}


def texts(table):
    return [[cell.text for cell in row] for row in table["rows"]]


def test_the_recorded_style_result_is_valid():
    assert schema_problems(data(), "fusion.schema.json", "data") == []


def test_a_row_per_size_with_bytes_times_bandwidths_and_speedups():
    view = fusion_view(data())
    (sizes,) = view["tables"]
    assert sizes["columns"] == COLUMNS and "membw plateau 4246 GB/s" in sizes["title"]
    small, large, skipped = texts(sizes)
    assert large[:3] == [str(1 << 28), "%d B" % (11 * 2 ** 29), "%d B" % (5 * 2 ** 29)]
    assert large[9:12] == ["2.2x", "2.14x", "yes"] and "within 15 %" in large[12]
    assert small[10] == "2.67x" and "above the 2.20x" in small[12]
    assert skipped[4] == "n/a" and "too big" in skipped[12]
    assert "(2+1) + (2+1) + (1+1) + (2+1) = 11" in view["note"]


def test_a_plot_of_both_versions_with_the_membw_plateau():
    (plot,) = fusion_view(data())["plots"]
    assert "unfused (4 kernels)" in plot and "fused (compiled)" in plot and "membw plateau" in plot
    assert "<script" not in plot


def test_without_membw_or_a_fused_version_it_says_why():
    result = data()
    entry = result["devices"][0]
    entry["membw_bandwidth_gbps"] = {"unavailable": "membw did not run"}
    entry["points"] = [dict(entry["points"][0], fused={"unavailable": "torch.compile(backend='inductor') failed: no triton"})]
    view = fusion_view(result)
    assert "no membw plateau: membw did not run" in view["tables"][0]["title"]
    row = view["tables"][0]["rows"][0]
    assert row[2].text == "n/a" and "no triton" in row[2].note
    (plot,) = view["plots"]
    assert "membw plateau" not in plot


def test_a_failed_device_and_no_data():
    result = data()
    result["devices"][0].update({"status": "error", "error": {"type": "RuntimeError", "message": "CUDA error"}, "points": []})
    assert texts(fusion_view(result)["tables"][0])[0][0] == "failed"
    assert fusion_view({})["tables"][0]["rows"] == [] and fusion_view({})["plots"] == []
