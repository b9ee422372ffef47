"""Metrics keyed by a device that is not a GPU (issue 47 point 5): a toy probe "drives" with a per-drive read rate,
declared with device_kind "drive", compared across the fleet and with the host's earlier run as a GPU's metric is; and
fabric's RDMA write bandwidth per port through the whole judge."""
import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge import fleet
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.catalogue import ProbeCatalogue
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.causes import Causes, fold_consequences
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.metrics import Metric
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.not_compared import mark_not_compared, peers_only_source
from ansible_collections.gpufleet.validation.plugins.plugin_utils.metric_spec import MetricSpec, spec_problems

import fabric_results
import helpers

READ = MetricSpec("drives.read_gbps", "Drive read", "GB/s", "higher", drift_tolerance=0.10, device_kind="drive")
LATENCY = MetricSpec("drives.latency_us", "Drive latency", "us", "lower", drift_tolerance=None, device_kind="drive")
GPU_RATE = MetricSpec("drives.gpu_rate_gbps", "A GPU's rate", "GB/s", "higher", drift_tolerance=0.10)
HOST_RATE = MetricSpec("drives.host_rate_gbps", "The host's rate", "GB/s", "higher", drift_tolerance=0.10, device_kind="host")
EARLIER, NOW = "20261207T010000Z-000001", "20261207T020000Z-000002"


def drive_metrics(data):
    return [Metric.of(READ, None, None, rate, device=name) for name, rate in sorted(data["read_gbps"].items())]


CATALOGUE = ProbeCatalogue(metrics={"drives": drive_metrics}, metric_specs={READ.id: READ, LATENCY.id: LATENCY},
                           gpu_free=frozenset({"drives"}))


def envelope(rates, run_id=NOW, host="node"):
    return {"schema_version": "1", "probe": "drives", "host": host, "status": "ok", "started": "2026-12-07T02:00:00Z",
            "duration_s": 1.0, "command": ["drives"], "environment": {}, "reason": "", "data": {"read_gbps": rates}, "run_id": run_id}


def judge(rates_of, previous_rates_of=None):
    hosts = {name: {"envelopes": {"drives": envelope(rates, host=name)}, "reached": True, "reason": "", "groups": ["rack1"],
                    "rule_overrides": {}} for name, rates in rates_of.items()}
    previous = None
    if previous_rates_of is not None:
        previous = {name: {"drives": envelope(rates, EARLIER, name)} for name, rates in previous_rates_of.items()}
    return fleet.judge_fleet(NOW, hosts, [], {"rules": []}, previous=previous, previous_run_id=EARLIER if previous else None,
                             catalogue=CATALOGUE)


def checks(judgement, host, check_id):
    return {check.device: check for check in judgement.hosts[host].checks if check.id == check_id}


HEALTHY = {"nvme0n1": 6.8, "nvme1n1": 6.9}


def test_a_per_drive_metric_is_declared_by_its_device_kind_and_a_bad_kind_is_named():
    assert spec_problems("drives", [READ, LATENCY, GPU_RATE, HOST_RATE]) == []
    assert GPU_RATE.device_kind == "gpu"
    [problem] = spec_problems("drives", [MetricSpec("drives.odd_gbps", "Odd", "GB/s", "higher", None, device_kind="NVMe drive")])
    assert problem.startswith("drives: metric drives.odd_gbps: device_kind 'NVMe drive' is not gpu, host or a lower-case name")


def test_a_metric_refuses_a_key_its_spec_does_not_declare():
    assert Metric.of(READ, None, None, 6.8, device="nvme0n1").device == "nvme0n1"
    assert Metric.of(GPU_RATE, "GPU-1", 0, 1.0) == Metric("drives.gpu_rate_gbps", "GPU-1", 0, 1.0, "GB/s", "higher")
    assert Metric.of(HOST_RATE, None, None, 1.0).device is None
    for spec, key in ((READ, ("GPU-1", 0, None)), (READ, (None, None, None)), (READ, (None, None, "")),
                      (GPU_RATE, ("GPU-1", 0, "nvme0n1")), (HOST_RATE, ("GPU-1", 0, None)), (HOST_RATE, (None, None, "nvme0n1"))):
        with pytest.raises(ValueError, match="keyed by"):
            Metric.of(spec, key[0], key[1], 1.0, device=key[2])


def test_an_outlier_drive_is_flagged_and_named_among_its_groups_drives():
    rates = {"node%d" % index: dict(HEALTHY) for index in range(4)}
    rates["node2"] = {"nvme0n1": 6.8, "nvme1n1": 3.1}
    judgement = judge(rates)
    found = checks(judgement, "node2", "fleet.drives.read_gbps")
    assert sorted(found) == ["nvme0n1", "nvme1n1"]
    assert found["nvme0n1"].status == "pass" and found["nvme1n1"].status == "warn"
    assert found["nvme1n1"].reason.startswith("drive nvme1n1: drives.read_gbps 3.1 GB/s against the fleet median")
    assert found["nvme1n1"].value == 3.1 and found["nvme1n1"].gpu_uuid is None and found["nvme1n1"].gpu_index is None
    assert {check.status for check in checks(judgement, "node0", "fleet.drives.read_gbps").values()} == {"pass"}
    assert judgement.fleet_statistics["unknown"]["drives.read_gbps"]["count"] == 8
    assert judgement.hosts["node2"].verdict == "warn"


def test_a_drive_slower_than_last_run_is_flagged_by_its_own_earlier_value_not_another_drives():
    before = {"node": {"nvme0n1": 6.8, "nvme1n1": 5.0}}
    judgement = judge({"node": {"nvme0n1": 6.8, "nvme1n1": 3.5}}, before)
    found = checks(judgement, "node", "drift.drives.read_gbps")
    assert found["nvme0n1"].status == "pass" and found["nvme0n1"].reference == 6.8
    assert found["nvme1n1"].status == "warn" and found["nvme1n1"].reference == 5.0
    assert found["nvme1n1"].reason.startswith("drive nvme1n1: drives.read_gbps 5 -> 3.5 GB/s (-30 %")
    assert "beyond the 10 % noise allowance" in found["nvme1n1"].reason


def test_a_drive_new_since_last_run_is_not_compared_and_one_gone_is_flagged_each_saying_why():
    judgement = judge({"node": {"nvme0n1": 6.8, "nvme2n1": 6.7}}, {"node": {"nvme0n1": 6.8, "nvme1n1": 6.9}})
    found = checks(judgement, "node", "drift.drives.read_gbps")
    assert sorted(found) == ["nvme0n1", "nvme1n1", "nvme2n1"]
    assert found["nvme0n1"].status == "pass"
    assert found["nvme2n1"].status == "skip"
    assert found["nvme2n1"].reason == "drive nvme2n1: drives.read_gbps 6.7 GB/s; not compared: run %s did not measure this drive" % EARLIER
    assert found["nvme1n1"].status == "warn" and found["nvme1n1"].reference == 6.9 and found["nvme1n1"].value is None
    assert found["nvme1n1"].reason == ("drive nvme1n1: drives.read_gbps was 6.9 GB/s in run %s and is not measured in this run: "
                                       "the drive is gone or was not measured" % EARLIER)


def test_a_metric_not_compared_between_runs_says_nothing_of_new_or_gone_drives():
    def latencies(data):
        return [Metric.of(LATENCY, None, None, value, device=name) for name, value in sorted(data["read_gbps"].items())]
    catalogue = ProbeCatalogue(metrics={"drives": latencies}, metric_specs={LATENCY.id: LATENCY})
    hosts = {"node": {"envelopes": {"drives": envelope({"nvme2n1": 80.0})}, "reached": True, "reason": "", "groups": [],
                      "rule_overrides": {}}}
    judgement = fleet.judge_fleet(NOW, hosts, [], {"rules": []}, previous={"node": {"drives": envelope({"nvme1n1": 90.0}, EARLIER)}},
                                  previous_run_id=EARLIER, catalogue=catalogue)
    assert checks(judgement, "node", "drift.drives.latency_us") == {}


def test_a_failing_drive_explains_only_its_own_consequences():
    root = Check(id="drives.smart", host="node", probe="drives", status="fail", reason="r", device="nvme1n1")
    mine = Check(id="fleet.drives.read_gbps", host="node", probe="drives", status="warn", reason="r", device="nvme1n1")
    other = Check(id="fleet.drives.read_gbps", host="node", probe="drives", status="warn", reason="r", device="nvme0n1")
    fold_consequences([root, mine, other], Causes({"rules": [], "judge_checks": [{"id": "fleet.drives.*", "follows": ["drives.smart"]}]}))
    assert mine.because == "drives.smart" and other.because == ""


def test_a_drives_peers_only_skip_is_decided_by_that_drives_fleet_check_alone():
    waiting = [Check(id="drives.read", host="node", probe="drives", status="skip", reason="r", device=name,
                     reference_source=peers_only_source("drives.read_gbps")) for name in ("nvme0n1", "nvme1n1")]
    decided = [Check(id="fleet.drives.read_gbps", host="node", probe="drives", status="pass", reason="r", device="nvme0n1")]
    marked = mark_not_compared(waiting, decided, None, "no GPU", [], "unknown", 3, 3)
    assert [check.device for check in marked] == ["nvme1n1"] and waiting[0].status == "skip"


def test_fabric_compares_each_ports_rdma_write_with_its_groups_ports_and_names_the_slow_port():
    hosts = {}
    for number in range(4):
        result = fabric_results.hgx_h200_healthy()
        result["host"] = "hgx%d" % number
        if number == 1:
            run = next(run for run in result["data"]["rdma_bandwidth"]["runs"] if run["rdma_device"] == "mlx5_3" and run["memory"] == "host")
            run["bandwidth_gbitps"] = 200.0
        hosts[result["host"]] = {"envelopes": {"health": helpers.as_machine(helpers.health_ok(), number), "fabric": result},
                                 "reached": True, "reason": "", "groups": ["rack1"], "rule_overrides": helpers.RIG_OVERRIDES}
    judgement = helpers.judge_fleet(NOW, hosts, helpers.baselines(), helpers.rules())
    found = checks(judgement, "hgx1", "fleet.fabric.rdma_write_host_gbitps")
    assert len(found) == 8 and found["mlx5_3/1"].status == "warn"
    assert found["mlx5_3/1"].reason.startswith("port mlx5_3/1: fabric.rdma_write_host_gbitps 200 Gb/s against the fleet median")
    assert [device for device, check in found.items() if check.status != "pass"] == ["mlx5_3/1"]
    assert {check.status for check in checks(judgement, "hgx0", "fleet.fabric.rdma_write_host_gbitps").values()} == {"pass"}
    assert len(checks(judgement, "hgx1", "fleet.fabric.rdma_write_cuda_gbitps")) == 8
