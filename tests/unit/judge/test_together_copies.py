"""membw.together_bandwidth and hostbw.together_uplink (issue 35): each together worker against the alone reference over
the workers sharing its GPU or its PCIe uplink. The results are the H200 rig's recorded alone phase with a together
record written the way the probes write it (their own reference and worker-result functions), schema-checked."""
import copy

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.hostbw.view import hostbw_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.membw.view import membw_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

from probe_packages.hostbw.together import alone_reference
from probe_packages.membw.together import headline_reference, worker_result

from helpers import GPU0, GPU1, RIG_OVERRIDES, baselines, checks_of, health_ok, judge_fleet, one, recorded, rules

ONE_GPU = "one GPU and workers_per_gpu 1: every GPU at once is this GPU alone, measured in the alone phase"
ROOT_PORTS = {0: "0000:15:01.0", 1: "0000:35:01.0"}


def worker(index, device, slot=0, on_device=1, result=None, error=None):
    """A worker record as the runner writes it; its result names its device as the workers do."""
    record = {"worker": index, "kind": "cuda", "device_index": device, "slot": slot, "workers_on_device": on_device,
              "status": "ok" if error is None else "error", "start_lag_ms": 0.4, "duration_s": 9.5}
    if error is None:
        record["result"] = dict(result, device={"kind": "cuda", "index": device, "name": "NVIDIA H200", "uuid": (GPU0, GPU1)[device]})
    else:
        record["error"] = error
    return record


def run_record(workers, reference, released=True):
    return {"method": "one process per worker, released at a barrier", "task": "probe_packages.membw.together:copy_worker",
            "workers": workers, "released_together": released, "start_spread_ms": 0.9, "wall_s": 14.1, "alone_reference": reference}


def membw_copy(gbps, size_mib=4096):
    """A worker's membw result at gbps: three repeats around it, timed as worker_result times them."""
    seconds = [2.0 * size_mib * 2 ** 20 / (gbps * factor) / 1e9 for factor in (0.999, 1.0, 1.001)]
    return worker_result(size_mib, 400, seconds, 140 * 2 ** 30, 70 * 2 ** 30, True, 1048576, 1.3)


def membw(workers=None, together=None, released=True, other_sizes=None):
    envelope = recorded("membw")
    data = envelope["data"]
    reference = headline_reference(data["devices"][0])
    if other_sizes:
        reference["other_sizes"] = other_sizes
    if together is None:
        together = run_record(workers, reference, released)
    data["together"] = together
    schema_validator("membw.schema.json").validate(data)
    return envelope


def hostbw_result(h2d, d2h, sharers=1, gpus=(0,), bridge="0000:15:01.0", size_mib=1024):
    direction = {"repeats_gbps": [1.0], "cv_pct": 0.1, "data_check": {"checked_elements": 4096, "mismatched_elements": 0, "ok": True}}
    return {"uplink_sharers": sharers, "uplink_bridge": bridge, "uplink_gpus": list(gpus), "size_mib": size_mib,
            "h2d_pinned_gbps": h2d, "d2h_pinned_gbps": d2h, "h2d": dict(direction, median_gbps=h2d),
            "d2h": dict(direction, median_gbps=d2h),
            "buffer": {"requested_mib": 1024, "used_mib": size_mib, "bytes": size_mib * 2 ** 20, "limited_by": "request"},
            "place": {"pci_bus_id": "0000:18:00.0", "numa_node": 0, "pcie_path": [bridge]},
            "numa": {"pinned": True, "note": "pinned to NUMA node 0's 56 CPUs (0-55)"}}


def hostbw(workers=None, together=None, released=True):
    envelope = recorded("hostbw")
    data = envelope["data"]
    if together is None:
        together = run_record(workers, alone_reference(data["devices"][0]), released)
    data["together"] = together
    schema_validator("hostbw.schema.json").validate(data)
    return envelope


def judge(**envelopes):
    hosts = {"rig": {"envelopes": dict(envelopes, health=health_ok()), "reached": True, "reason": "", "groups": [],
                     "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run35", hosts, baselines(), rules()).hosts["rig"]


ALONE_MEMBW = 4278.89  # the rig's GPU 0 alone: the median of its repeats at 4096 MiB
ALONE_H2D, ALONE_D2H = 55.442, 55.346


def test_every_gpu_copying_at_once_as_fast_as_alone_passes_with_both_numbers_in_words():
    verdict = judge(membw=membw([worker(0, 0, result=membw_copy(4270.0)), worker(1, 1, result=membw_copy(4250.0))]))
    for index in (0, 1):
        check = one(verdict, "membw.together_bandwidth", index)
        assert check.status == "pass", check.reason
    check = one(verdict, "membw.together_bandwidth", 1)
    assert check.reason.startswith("GPU 1 worker 1: 4250 GB/s at 4096 MiB with every GPU copying at once, 99.3 % of its share")
    assert "alone on GPU 0: 4279 GB/s" in check.reason and check.value == 99.3 and check.gpu_uuid == GPU1
    assert check.threshold.startswith(">= 75 % of alone / workers on the GPU")


@pytest.mark.parametrize("gbps, status", [(3700.0, "warn"), (3000.0, "fail")])
def test_a_gpu_whose_memory_slows_when_the_node_works_is_named(gbps, status):
    verdict = judge(membw=membw([worker(0, 0, result=membw_copy(4270.0)), worker(1, 1, result=membw_copy(gbps))]))
    assert one(verdict, "membw.together_bandwidth", 0).status == "pass"
    slow = one(verdict, "membw.together_bandwidth", 1)
    assert slow.status == status and slow.reason.startswith("GPU 1 worker 1: ") and "slower when the node works" in slow.reason


def test_two_workers_on_one_gpu_are_each_owed_half():
    halves = [worker(0, 0, 0, 2, membw_copy(2130.0)), worker(1, 0, 1, 2, membw_copy(2120.0))]
    checks = checks_of(judge(membw=membw(halves)), "membw.together_bandwidth", 0)
    assert [check.status for check in checks] == ["pass", "pass"]
    assert "of its share 2139 GB/s" in checks[1].reason and "shared by 2 workers on the GPU" in checks[1].reason
    slow = [worker(0, 0, 0, 2, membw_copy(2130.0)), worker(1, 0, 1, 2, membw_copy(1300.0))]
    assert [check.status for check in checks_of(judge(membw=membw(slow)), "membw.together_bandwidth", 0)] == ["pass", "fail"]


def test_a_worker_at_another_size_is_compared_with_the_alone_copy_at_that_size_only():
    workers = [worker(0, 0, result=membw_copy(4100.0, 1024)), worker(1, 1, result=membw_copy(4270.0))]
    at_1024 = {"buffer_mib": 1024, "bandwidth_gbps": 4150.0, "repeats_gbps": [4150.0], "cv_pct": {"unavailable": "one"},
               "source": "timed alone after the together phase at the workers' size"}
    check = one(judge(membw=membw(workers, other_sizes=[at_1024])), "membw.together_bandwidth", 0)
    assert check.status == "pass" and "at 1024 MiB" in check.reason and "alone on GPU 0: 4150 GB/s" in check.reason
    check = one(judge(membw=membw(workers)), "membw.together_bandwidth", 0)
    assert check.status == "skip" and "no alone reference at that size" in check.reason and "none at 1024 MiB" in check.reason


def test_workers_that_did_not_start_together_warn_instead_of_passing():
    verdict = judge(membw=membw([worker(0, 0, result=membw_copy(4270.0)), worker(1, 1, result=membw_copy(3000.0))], released=False))
    assert one(verdict, "membw.together_bandwidth", 0).status == "warn"
    assert "not released together (start spread 0.9 ms)" in one(verdict, "membw.together_bandwidth", 0).reason
    assert one(verdict, "membw.together_bandwidth", 1).status == "fail"


def test_a_failed_worker_is_an_error_that_names_it():
    verdict = judge(membw=membw([worker(0, 0, result=membw_copy(4270.0)), worker(1, 1, error="MemoryError: no size fits")]))
    check = one(verdict, "membw.together_bandwidth", 1)
    assert check.status == "error" and check.reason == "GPU 1 worker 1: the together worker failed: MemoryError: no size fits"


def test_one_gpu_and_an_older_result_skip_with_the_reason_and_the_alone_checks_still_judge():
    verdict = judge(membw=membw(together={"unavailable": ONE_GPU}), hostbw=hostbw(together={"unavailable": ONE_GPU}))
    for check_id in ("membw.together_bandwidth", "hostbw.together_uplink"):
        check = one(verdict, check_id)
        assert check.status == "skip" and check.reason == "the together phase did not run: " + ONE_GPU
    older = judge(membw=recorded("membw"), hostbw=recorded("hostbw"))
    for check_id in ("membw.together_bandwidth", "hostbw.together_uplink"):
        assert one(older, check_id).status == "skip" and "holds no together phase" in one(older, check_id).reason
    for check_id in ("membw.bandwidth", "hostbw.pinned_h2d", "hostbw.pinned_d2h"):
        assert {check.status for check in checks_of(older, check_id)} == {"pass"}


def test_gpus_with_their_own_uplinks_copying_at_once_as_fast_as_alone_pass():
    workers = [worker(0, 0, result=hostbw_result(55.1, 55.0)),
               worker(1, 1, result=hostbw_result(55.3, 54.9, bridge=ROOT_PORTS[1], gpus=(1,)))]
    verdict = judge(hostbw=hostbw(workers))
    check = one(verdict, "hostbw.together_uplink", 1)
    assert check.status == "pass" and check.value == 99.2
    assert check.reason.startswith("GPU 1 worker 1, pinned, every GPU copying at once: H2D 55.3 GB/s, 99.7 % of its share")
    assert "uplink root port 0000:35:01.0 shared by 1 worker on GPU 1" in check.reason
    assert one(verdict, "hostbw.together_uplink", 0).status == "pass"


def test_a_halved_uplink_passes_where_two_gpus_share_it_and_fails_where_they_do_not():
    half = ALONE_H2D / 2, ALONE_D2H / 2
    shared = [worker(0, 0, result=hostbw_result(*half, sharers=2, gpus=(0, 1))),
              worker(1, 1, result=hostbw_result(*half, sharers=2, gpus=(0, 1)))]
    verdict = judge(hostbw=hostbw(shared))
    for index in (0, 1):
        check = one(verdict, "hostbw.together_uplink", index)
        assert check.status == "pass" and "shared by 2 workers on GPUs 0, 1" in check.reason, check.reason
    own = [worker(0, 0, result=hostbw_result(55.1, 55.0)),
           worker(1, 1, result=hostbw_result(*half, bridge=ROOT_PORTS[1], gpus=(1,)))]
    check = one(judge(hostbw=hostbw(own)), "hostbw.together_uplink", 1)
    assert check.status == "fail" and check.value == 50.0 and "than its uplink's sharing explains" in check.reason


def test_one_slow_direction_is_enough_and_two_workers_on_one_gpu_share_its_link():
    slow_d2h = [worker(0, 0, result=hostbw_result(55.1, 55.0)),
                worker(1, 1, result=hostbw_result(55.1, 45.0, bridge=ROOT_PORTS[1], gpus=(1,)))]
    check = one(judge(hostbw=hostbw(slow_d2h)), "hostbw.together_uplink", 1)
    assert check.status == "warn" and "D2H 45 GB/s, 81.3 %" in check.reason
    pair = [worker(0, 0, 0, 2, hostbw_result(27.6, 27.5, sharers=2)), worker(1, 0, 1, 2, hostbw_result(27.5, 27.7, sharers=2))]
    assert [check.status for check in checks_of(judge(hostbw=hostbw(pair)), "hostbw.together_uplink", 0)] == ["pass", "pass"]


def test_the_dossiers_show_the_node_number_beside_the_alone_number():
    membw_data = membw([worker(0, 0, 0, 2, membw_copy(2130.0)), worker(1, 0, 1, 2, error="MemoryError: x")])["data"]
    rows = [[cell.text for cell in row] for row in membw_view(membw_data)["tables"][2]["rows"]]
    assert rows[0] == ["GPU 0 worker 0", "4096 MiB", "2130 GB/s", "4279 GB/s", "2139 GB/s", "99.6 %", "0.4 ms"]
    assert rows[1][:2] == ["GPU 0 worker 1", "failed"]
    hostbw_data = hostbw([worker(0, 0, result=hostbw_result(27.7, 27.6, sharers=2, gpus=(0, 1))),
                          worker(1, 1, result=hostbw_result(27.6, 27.6, sharers=2, gpus=(0, 1)))], released=False)["data"]
    table = hostbw_view(hostbw_data)["tables"][1]
    rows = [[cell.text for cell in row] for row in table["rows"]]
    assert rows[0] == ["GPU 0 worker 0", "pinned H2D", "27.7 GB/s", "55.4 GB/s", "2", "99.9 %", "0000:15:01.0", "0.4 ms"]
    assert len(rows) == 4 and "NOT released together" in table["title"]
    unavailable = copy.deepcopy(membw_data)
    unavailable["together"] = {"unavailable": ONE_GPU}
    assert membw_view(unavailable)["tables"][2]["empty"] == "the together phase did not run: " + ONE_GPU
    assert len(membw_view(recorded("membw")["data"])["tables"]) == 2
