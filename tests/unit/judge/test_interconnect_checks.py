"""p2p pairs and all-reduce curves held against the link class's known-good value, the host's median, and each other."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.interconnect_checks import link_group
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.registry import probe_metrics

from helpers import GPU0, GPU1, RIG_OVERRIDES, baselines, checks_of, health_ok, judge_fleet, one, rules

ENVELOPE = {"schema_version": "1", "host": "rig", "status": "ok", "started": "2026-11-30T03:00:00+00:00",
            "duration_s": 3.0, "command": [], "environment": {}, "reason": ""}
UUIDS = (GPU0, GPU1)


def pair(src, dst, uni, bidir=None, link="NV18", kind="nvlink", same_numa=True, **extra):
    entry = {"src": src, "dst": dst, "src_uuid": UUIDS[src % 2], "dst_uuid": UUIDS[dst % 2], "link_class": link, "link_kind": kind,
             "nvlink_count": 18 if kind == "nvlink" else 0, "pcie_path": "SYS" if kind == "nvlink" else link,
             "numa_node_src": 0, "numa_node_dst": 0 if same_numa else 1, "same_numa": same_numa, "peer_access": True,
             "unidirectional": {"sweep": [], "plateau": {"found": True, "sizes_bytes": [], "value_gbps": uni, "reason": ""},
                                "headline_gbps": uni, "headline_source": "plateau", "spin_covered_enqueue": True},
             "bidirectional": {"sweep": [], "plateau": {"found": True, "sizes_bytes": [], "value_gbps": bidir, "reason": ""},
                               "headline_gbps": bidir if bidir is not None else 2 * uni, "headline_source": "plateau",
                               "spin_covered_enqueue": True},
             "latency": {"size_bytes": 8, "median_us": 2.1, "samples": 200}, "verified": True}
    entry.update(extra)
    return entry


def p2p(pairs, gpus=2):
    devices = [{"index": index, "uuid": UUIDS[index % 2], "name": "NVIDIA H200", "nvml_index": index} for index in range(gpus)]
    return dict(ENVELOPE, probe="p2p", data={"method": {}, "plan": {}, "topology": {"source": "nvml", "gpu_count": gpus},
                                             "devices": devices, "pairs": pairs, "errors": []})


def curve(name, peak, verified=True, largest=2 ** 30):
    sweep = [{"size_bytes": size, "time_us": 10.0, "algbw_gbps": peak, "busbw_gbps": peak, "iterations": 20,
              "verified": verified if size == largest else True} for size in (8, 1024, largest)]
    return {"name": name, "env": {} if name == "default" else {"NCCL_P2P_DISABLE": "1"}, "sweep": sweep,
            "plateau": {"found": True, "sizes_bytes": [largest], "busbw_gbps": peak, "reason": ""},
            "peak_busbw_gbps": peak, "busbw_at_largest_gbps": peak, "largest_bytes": largest,
            "knee": {"knee_bytes": 2.0e6, "startup_us": 20.0, "plateau_algbw_gbps": peak, "first_size_at_half_plateau_bytes": 2 ** 21,
                     "method": "t"}, "transports": ["P2P/CUMEM"], "transport_lines": []}


def collective(curves, ranks=2, kind="cuda", link_classes=("NV18",)):
    return dict(ENVELOPE, probe="collective", data={
        "method": {}, "plan": {"backend": "nccl" if kind == "cuda" else "gloo", "kind": kind, "world_size": ranks,
                               "sizes_bytes": [8, 1024, 2 ** 30], "dtype": "float32", "op": "sum", "warmup": 5,
                               "iterations_rule": "", "max_bytes": 2 ** 30, "note": ""},
        "devices": [], "software": {"torch_version": "2.11", "nccl_version": "2.28.9", "backend": "nccl"},
        "environment_nccl": {"NCCL_NVLS_ENABLE": "0"}, "topology": {"link_classes": list(link_classes)},
        "curves": curves, "explanation": "x", "errors": []})


def judge(**envelopes):
    envelopes = dict(envelopes, health=health_ok())
    hosts = {"rig": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run5", hosts, baselines(), rules()).hosts["rig"]


@pytest.mark.parametrize("measured, status", [(400.0, "pass"), (377.0, "pass"), (360.0, "warn"), (330.0, "fail")])
def test_nvlink_pair_against_nvbandwidth_write_ce(measured, status):
    verdict = judge(p2p=p2p([pair(0, 1, measured), pair(1, 0, 395.0)]))
    found = [check for check in checks_of(verdict, "p2p.unidirectional") if "GPU 0 → GPU 1" in check.reason]
    assert len(found) == 1
    check = found[0]
    assert check.status == status and check.reference == 396.4
    assert "nvbandwidth_d2d_write_ce" in check.reference_source
    assert "%.0f %% of the datasheet's 450 GB/s" % (100 * measured / 450) in check.reason


def test_bidirectional_against_known_good_and_the_900_gbps_datasheet_total():
    verdict = judge(p2p=p2p([pair(0, 1, 390.0, bidir=780.0), pair(1, 0, 390.0, bidir=600.0)]))
    statuses = sorted((check.value, check.status) for check in checks_of(verdict, "p2p.bidirectional"))
    assert statuses == [(600.0, "fail"), (780.0, "pass")]
    assert all("of the datasheet's 900 GB/s" in check.reason for check in checks_of(verdict, "p2p.bidirectional"))


def test_a_slow_pair_stands_out_against_its_siblings_without_a_baseline():
    pairs = [pair(0, 1, 50.0, link="PXB", kind="pcie"), pair(1, 0, 49.0, link="PXB", kind="pcie"),
             pair(0, 2, 25.0, link="PXB", kind="pcie"), pair(2, 0, 50.5, link="PXB", kind="pcie"),
             pair(1, 2, 49.5, link="PXB", kind="pcie"), pair(2, 1, 50.2, link="PXB", kind="pcie")]
    verdict = judge(p2p=p2p(pairs, gpus=3))
    outliers = {check.reason.split(":")[0]: check.status for check in checks_of(verdict, "p2p.pair_outlier")}
    assert outliers.pop("GPU 0 → GPU 2 (PXB)") == "fail"
    assert set(outliers.values()) == {"pass"}
    # the H200 baseline has no PCIe P2P value: skipped with the reason, never passed
    skipped = checks_of(verdict, "p2p.unidirectional")
    assert skipped and {check.status for check in skipped} == {"skip"}
    assert "no known-good value for SKU h200-sxm" in skipped[0].reason


def test_missing_peer_access_corruption_and_a_failed_pair_are_named():
    pairs = [pair(0, 1, 390.0, peer_access=False, error="no peer access"),
             pair(1, 0, 390.0, verified=False), pair(0, 2, 390.0), pair(2, 0, 390.0),
             pair(1, 2, 390.0, error="CUDA error: an illegal memory access"), pair(2, 1, 390.0)]
    verdict = judge(p2p=p2p(pairs, gpus=3))
    by_pair = {check.reason.split(":")[0]: check.status for check in checks_of(verdict, "p2p.pairs")}
    assert by_pair["GPU 0 → GPU 1 (NV18)"] == "fail"
    assert by_pair["GPU 1 → GPU 0 (NV18)"] == "fail"
    assert by_pair["GPU 1 → GPU 2 (NV18)"] == "error"
    assert by_pair["GPU 0 → GPU 2 (NV18)"] == "pass"
    assert verdict.verdict == "fail"


def test_a_pair_missing_from_the_matrix_fails():
    verdict = judge(p2p=p2p([pair(0, 1, 390.0)]))
    assert any(check.status == "fail" and "1 ordered pairs reported for 2 GPUs; 2 expected" in check.reason
               for check in checks_of(verdict, "p2p.pairs"))


def test_link_groups_follow_numa_then_path():
    assert link_group({"link_kind": "nvlink"}) == "nvlink"
    assert link_group({"link_kind": "pcie", "same_numa": False, "pcie_path": "PIX"}) == "pcie_cross_numa"
    assert link_group({"link_kind": "pcie", "same_numa": {"unavailable": "x"}, "pcie_path": "SYS"}) == "pcie_cross_numa"
    assert link_group({"link_kind": "pcie", "same_numa": {"unavailable": "x"}, "pcie_path": "NODE"}) == "pcie_same_numa"
    assert link_group({"link_kind": {"unavailable": "x"}}) == "unknown"


def test_p2p_metrics_are_the_worst_pair():
    data = p2p([pair(0, 1, 390.0, 780.0), pair(1, 0, 370.0, 760.0)])["data"]
    metrics = {metric.metric_id: metric.value for metric in probe_metrics("p2p", data)}
    assert metrics == {"p2p.worst_pair_gbps": 370.0, "p2p.worst_pair_bidirectional_gbps": 760.0}


def test_collective_data_check_and_p2p_gain():
    verdict = judge(collective=collective([curve("default", 360.0), curve("p2p_disabled", 20.0)]))
    assert {check.status for check in checks_of(verdict, "collective.verified")} == {"pass"}
    gain = one(verdict, "collective.p2p_gain")
    assert gain.status == "pass" and gain.value == 18.0
    busbw = one(verdict, "collective.busbw")
    assert busbw.status == "skip" and "no known-good value for 2 ranks" in busbw.reason and busbw.value == 360.0


def test_collective_without_nvlink_gain_warns_and_corrupt_data_fails():
    verdict = judge(collective=collective([curve("default", 30.0), curve("p2p_disabled", 20.0, verified=False)]))
    assert one(verdict, "collective.p2p_gain").status == "warn"
    assert "not using NVLink" in one(verdict, "collective.p2p_gain").reason
    failed = [check for check in checks_of(verdict, "collective.verified") if check.status == "fail"]
    assert len(failed) == 1 and "p2p_disabled" in failed[0].reason and "1073741824" in failed[0].reason


@pytest.mark.parametrize("measured, status", [(360.0, "pass"), (330.0, "warn"), (290.0, "fail")])
def test_eight_gpu_busbw_against_the_nvls_off_known_good(measured, status):
    verdict = judge(collective=collective([curve("default", measured), curve("p2p_disabled", 20.0)], ranks=8))
    check = one(verdict, "collective.busbw")
    assert check.status == status and check.reference == 367
    assert "allreduce_busbw_8gpu_nvls_off" in check.reference_source


def test_cpu_collective_is_skipped_and_not_a_fleet_metric():
    envelope = collective([curve("default", 1.0)], kind="cpu", link_classes=())
    verdict = judge(collective=envelope)
    assert one(verdict, "collective.busbw").status == "skip"
    assert probe_metrics("collective", envelope["data"]) == []
    assert [metric.value for metric in probe_metrics("collective", collective([curve("default", 360.0)])["data"])] == [360.0]


def _unavailable(probe, reason):
    return dict(ENVELOPE, probe=probe, status="unavailable", reason=reason, data={})


@pytest.mark.parametrize("expected, status", [(1, "skip"), (2, "fail"), (8, "fail")])
def test_a_one_gpu_host_is_not_failed_for_having_no_pair(expected, status):
    envelopes = {"health": health_ok(), "p2p": _unavailable("p2p", "1 GPU(s) visible: no pair to measure"),
                 "collective": _unavailable("collective", "1 GPU visible: an all-reduce needs at least 2 ranks")}
    hosts = {"rig": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [],
                     "rule_overrides": {"health.gpu_count": {"params": {"expected": expected}}}}}
    verdict = judge_fleet("run5", hosts, baselines(), rules()).hosts["rig"]
    for probe in ("p2p", "collective"):
        check = one(verdict, "%s.probe_status" % probe)
        assert check.status == status
        if status == "skip":
            assert "needs at least 2 GPUs and this host should have 1" in check.reason
