"""p2p pairs and all-reduce curves held against the link class's known-good value, the host's median, and each other."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.p2p.checks import link_group
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import metric_catalogue, probe_metrics

from probe_packages.collective.knee import describe_bytes, knee_of_curve
from probe_packages.collective.outcome import outcome_of as collective_outcome
from probe_packages.collective.stats import PLATEAU_MIN_POINTS, PLATEAU_TOLERANCE_PCT, bus_factor, plateau_min_size, summarize_curve
from probe_packages.p2p.matrix import assemble_matrix, run_outcome

from helpers import GPU0, GPU1, RIG_OVERRIDES, baselines, checks_of, health_ok, judge_fleet, one, recorded, rules

ENVELOPE = {"schema_version": "1", "host": "rig", "status": "ok", "started": "2026-11-30T03:00:00+00:00",
            "duration_s": 3.0, "command": [], "environment": {}, "reason": ""}
UUIDS = (GPU0, GPU1)
NO_PEER = "peer_access"
CPU_TOPOLOGY = "no GPU: the ranks are CPU processes on this host"
# The all-reduce sweeps are three sizes of the rig's recorded curves, and the explanation a placeholder: the report's
# tests (tests/unit/report/test_report_interconnect.py) build their data with these builders and count on both.
CURVE_SIZES = (8, 1024)
EXPLANATION = "x"


def uuid_of(index):
    """GPU `index`'s UUID: the rig's two, then made-up ones for the GPUs a larger host would have."""
    return UUIDS[index] if index < len(UUIDS) else "GPU-00000000-0000-4000-8000-%012d" % index


def _scaled(points, key, value, reference):
    """The sweep `points` (copies) with `key` scaled so that `reference` becomes `value`, each time_per_copy_s alike."""
    factor = value / reference
    for point in points:
        point[key] = value if point[key] == reference else round(point[key] * factor, 4)
        if "time_per_copy_s" in point:
            point["time_per_copy_s"] = round(point["time_per_copy_s"] / factor, 10)
        for side in ("src_to_dst_gbps", "dst_to_src_gbps"):
            if side in point:
                point[side] = round(point[side] * factor, 4)
    return points


def _direction(section, value):
    """A recorded unidirectional or bidirectional section whose plateau (its headline) is `value`."""
    reference = section["headline_gbps"]
    _scaled(section["sweep"], "gbps", value, reference)
    section["plateau"]["value_gbps"] = value
    section["headline_gbps"] = value
    return section


def pair(src, dst, uni, bidir=None, link="NV18", kind="nvlink", same_numa=True, **extra):
    """The rig's recorded GPU 0 -> GPU 1 pair as src -> dst over `link`, its unidirectional plateau uni GB/s and its
    bidirectional one bidir (default 2 x uni). extra as the probe writes it: error (the pair failed, so it is not
    verified; a caller drops the phases that did not run), verified=False (a copy did not match its source)."""
    entry = recorded("p2p")["data"]["pairs"][0]
    entry.update({"src": src, "dst": dst, "src_uuid": uuid_of(src), "dst_uuid": uuid_of(dst), "link_class": link,
                  "link_kind": kind, "nvlink_count": 18 if kind == "nvlink" else 0,
                  "nvlink_via": "nvswitch" if kind == "nvlink" else "none", "pcie_path": "SYS" if kind == "nvlink" else link,
                  "numa_node_src": 0, "numa_node_dst": 0 if same_numa else 1, "same_numa": same_numa})
    _direction(entry["unidirectional"], uni)
    _direction(entry["bidirectional"], bidir if bidir is not None else 2 * uni)
    entry.update(extra)
    if entry.get("verified") is False and "error" not in entry:
        entry["unidirectional"]["sweep"][-1]["verified"] = False
    if "error" in entry:
        entry["verified"] = False
    return entry


def _pair_errors(pairs):
    """data.errors as the probe names them: a failed pair's error, a copy that did not match its source."""
    errors = []
    for entry in pairs:
        name = "%d->%d" % (entry["src"], entry["dst"])
        if "error" in entry:
            errors.append({"pair": name, "what": NO_PEER if entry["peer_access"] is False else "bidirectional",
                           "error": entry["error"]})
        elif entry["verified"] is False:
            errors.append({"pair": name, "what": "data_check", "error": "unidirectional: the destination differs from the "
                           "source after the copies at %d bytes" % entry["unidirectional"]["sweep"][-1]["size_bytes"]})
    return errors


def p2p(pairs, gpus=2):
    """The rig's recorded p2p result with `pairs` among `gpus` GPUs; its matrix, errors, status and reason as the probe
    assembles them from the pairs."""
    envelope = recorded("p2p")
    data = envelope["data"]
    errors = _pair_errors(pairs)
    data.update(devices=[{"index": index, "uuid": uuid_of(index), "name": "NVIDIA H200", "nvml_index": index} for index in range(gpus)],
                topology={"source": "nvml", "gpu_count": gpus}, pairs=pairs, errors=errors,
                matrix=assemble_matrix(gpus, pairs))
    status, reason = run_outcome(pairs, errors)
    envelope.update(status=status, reason=reason)
    return envelope


def curve(name, peak, verified=True, largest=2 ** 30):
    """The rig's recorded all-reduce curve `name` (default, or p2p_disabled: NCCL_P2P_DISABLE=1) at 8 B, 1 KiB and
    `largest` bytes, its busbw scaled to peak GB/s at the largest size; verified=False: the largest size's data check
    failed. Summarised (plateau, peak, knee) as the probe does, for 2 ranks; collective() does it again for its own."""
    [entry] = [found for found in recorded("collective")["data"]["curves"] if found["name"] == name]
    by_size = {point["size_bytes"]: point for point in entry["sweep"]}
    factor = peak / by_size[largest]["busbw_gbps"]
    entry["sweep"] = [dict(by_size[size], busbw_gbps=peak if size == largest else by_size[size]["busbw_gbps"] * factor,
                           verified=verified if size == largest else True) for size in CURVE_SIZES + (largest,)]
    return _summarized(entry, 2)


def _summarized(entry, ranks):
    """The curve's sweep (its busbw per size) over `ranks` ranks, summarised by the probe's summarize_curve; the knee,
    which the probe finds from 6 sizes on, from the smallest size's time (knee_of_curve with one startup point)."""
    raw = [{"size_bytes": point["size_bytes"], "time_s": point["size_bytes"] / (point["busbw_gbps"] / bus_factor(ranks) * 1e9),
            "iterations": point["iterations"], "verified": point["verified"]} for point in entry["sweep"]]
    entry.update(summarize_curve(raw, ranks))
    sizes = [point["size_bytes"] for point in raw]
    entry["knee"] = knee_of_curve(sizes, [point["time_s"] for point in raw], [point["algbw_gbps"] for point in entry["sweep"]],
                                  startup_points=1, tolerance_pct=PLATEAU_TOLERANCE_PCT, min_points=PLATEAU_MIN_POINTS,
                                  min_size=plateau_min_size(sizes))
    return entry


def _curve_errors(curves):
    """data.errors as the probe names them: a curve whose all-reduced data did not match at some sizes."""
    errors = []
    for entry in curves:
        wrong = [point["size_bytes"] for point in entry["sweep"] if not point["verified"]]
        if wrong:
            sizes = ", ".join(describe_bytes(size) for size in wrong)
            errors.append({"curve": entry["name"], "what": "data check", "error": "the all-reduced data differed from the "
                           "expected sums at %d of %d sizes (%s)" % (len(wrong), len(entry["sweep"]), sizes)})
    return errors


def collective(curves, ranks=2, kind="cuda", link_classes=("NV18",)):
    """The rig's recorded collective result with `curves` over `ranks` ranks; kind cpu: gloo over CPU ranks (no GPU,
    no NCCL, no transports)."""
    envelope = recorded("collective")
    data = envelope["data"]
    data["curves"] = [_summarized(entry, ranks) for entry in curves]
    sizes = sorted({point["size_bytes"] for entry in curves for point in entry["sweep"]})
    data["plan"].update(world_size=ranks, sizes_bytes=sizes, max_bytes=sizes[-1],
                        note="NCCL with one rank per GPU (%d ranks), messages of %s B; then the same sweep in fresh workers "
                             "with NCCL_P2P_DISABLE=1" % (ranks, ", ".join(str(size) for size in sizes)))
    data["explanation"] = EXPLANATION
    data["errors"] = _curve_errors(curves)
    if kind == "cuda":
        data["devices"] = [{"index": index, "uuid": uuid_of(index), "name": "NVIDIA H200"} for index in range(ranks)]
        data["topology"]["link_classes"] = list(link_classes)
        data["topology"]["pairs"] = [entry for entry in data["topology"]["pairs"] if entry["link_class"] in link_classes]
    else:
        data["plan"].update(backend="gloo", kind="cpu", worker_env_set={},
                            note="no GPU: gloo with %d CPU ranks over loopback (kind cpu) tests the probe's pipeline, not a "
                                 "GPU interconnect" % ranks)
        data.update(devices=[], software=dict(data["software"], backend="gloo", nccl_version={"unavailable": "gloo does not use NCCL"}),
                    environment_nccl={}, topology={"unavailable": CPU_TOPOLOGY})
        for entry in curves:
            entry.update(transports={"unavailable": "gloo does not choose NCCL transports; it uses TCP sockets"},
                         transport_lines=[])
    status, reason = collective_outcome(curves, data["errors"])
    envelope.update(status=status, reason=reason)
    return envelope


def judge(**envelopes):
    envelopes = dict(envelopes, health=health_ok())
    hosts = {"rig": {"envelopes": envelopes, "reached": True, "reason": "", "groups": [], "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run5", hosts, baselines(), rules()).hosts["rig"]


@pytest.mark.parametrize("measured, status, words", [
    (400.0, "pass", "400 GB/s, 101 % of the known-good 396 GB/s (88.9 % of the datasheet's 450 GB/s)"),
    (377.0, "pass", "377 GB/s, 95.1 % of the known-good 396 GB/s (83.8 % of the datasheet's 450 GB/s)"),
    (360.0, "warn", "360 GB/s, 90.8 % of the known-good 396 GB/s (80 % of the datasheet's 450 GB/s)"),
    (330.0, "fail", "330 GB/s, 83.2 % of the known-good 396 GB/s (73.3 % of the datasheet's 450 GB/s)")])
def test_nvlink_pair_against_nvbandwidth_write_ce(measured, status, words):
    verdict = judge(p2p=p2p([pair(0, 1, measured), pair(1, 0, 395.0)]))
    found = [check for check in checks_of(verdict, "p2p.unidirectional") if "GPU 0 → GPU 1" in check.reason]
    assert len(found) == 1
    check = found[0]
    assert check.status == status and check.reference == 396.4
    assert "nvbandwidth_d2d_write_ce" in check.reference_source
    assert "GPU 0 → GPU 1 (NV18) unidirectional copy " + words in check.reason


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
    assert busbw.status == "pass" and busbw.reference == 327.9 and "allreduce_busbw_2gpu_nvls_off" in busbw.reference_source


def test_busbw_without_a_known_good_for_its_rank_count_is_compared_with_peers_only():
    verdict = judge(collective=collective([curve("default", 360.0), curve("p2p_disabled", 20.0)], ranks=4))
    busbw = one(verdict, "collective.busbw")
    assert busbw.status == "skip" and "no known-good value for 4 ranks" in busbw.reason and busbw.value == 360.0


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


def test_collective_hosts_metric_is_the_collectives_per_host_group_as_its_catalogue_declares_it():
    data = collective([curve("default", 360.0)])["data"]
    [own] = probe_metrics("collective", data)
    [across] = probe_metrics("collective_hosts", data)
    spec = metric_catalogue()["collective_hosts.peak_busbw_gbps"]
    assert across.metric_id == spec.id and across.value == own.value == 360.0
    assert (across.unit, across.better) == (spec.unit, spec.better) == (own.unit, own.better)
    assert probe_metrics("collective_hosts", collective([curve("default", 1.0)], kind="cpu", link_classes=())["data"]) == []


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
