"""The fabric probe judged by the whole judge (judge_fleet), as the report runs it: the previous run reaches the counter
checks (RuleContext.earlier), the recorded 2-GPU rig (a VM slice) is never failed for the board's NICs, and the HCA
firmware is a setting the fleet compares."""
import fabric_results as results
import helpers


def judge(fabric, previous=None):
    hosts = {"rig": {"envelopes": {"health": helpers.health_ok(), "fabric": fabric}, "reached": True, "reason": "",
                     "groups": ["rack1"], "rule_overrides": helpers.RIG_OVERRIDES}}
    judgement = helpers.judge_fleet("20261203T120000Z-000002", hosts, helpers.baselines(), helpers.rules(), previous=previous)
    return judgement.hosts["rig"]


def test_symbol_errors_rising_since_the_previous_run_fail_through_the_judge():
    earlier, now = results.symbol_errors_rising()
    verdict = judge(now, previous={"rig": {"health": helpers.health_ok(), "fabric": earlier}})
    failed = [check for check in helpers.checks_of(verdict, "fabric.symbol_error_rate") if check.status == "fail"]
    assert [check.reason.split(":")[0] for check in failed] == ["mlx5_2 port 1 symbol_error rose by 1000 since 20261203T100000Z-000001, 2 h earlier"]
    assert verdict.verdict == "fail"


def test_without_a_previous_run_the_counters_are_context():
    unused_earlier, now = results.symbol_errors_rising()
    verdict = judge(now)
    assert {check.status for check in helpers.checks_of(verdict, "fabric.symbol_error_rate")} == {"skip"}


def test_the_recorded_2_gpu_rig_slice_with_two_of_the_boards_nics_is_not_failed_for_the_rest():
    two = results.hgx_h200_healthy()
    two["host"] = "rig"
    two["data"]["rdma_devices"] = two["data"]["rdma_devices"][:2]
    two["data"]["gpus"] = two["data"]["gpus"][:2]
    two["data"]["rdma_bandwidth"]["runs"] = two["data"]["rdma_bandwidth"]["runs"][:4]
    verdict = judge(two)
    count = helpers.one(verdict, "fabric.rdma_port_count")
    assert count.status == "skip" and "slice of the board" in count.reason and "not held to the board's 8" in count.reason
    assert [check.id for check in verdict.checks if check.probe == "fabric" and check.status in ("fail", "warn", "error")] == []


def test_the_vm_without_rdma_judged_whole_fails_nothing():
    verdict = judge(results.vm_without_rdma())
    fabric = [check for check in verdict.checks if check.probe == "fabric"]
    assert fabric and [check.id for check in fabric if check.status in ("fail", "warn", "error")] == []
