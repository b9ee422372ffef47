"""probelib.measure.together: worker processes released together at a barrier, each failure kept to its worker."""
import os
import time

import pytest

from probelib.measure import together

PROBES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "probes"))
# Tasks the workers import from a probes directory made for the test (probelib itself linked in beside them).
TASKS = '''
import os, time


def stamp(device, worker, args, start):
    time.sleep(args["prepare_s"][worker["worker"]])
    lag = start()
    began = time.monotonic()
    time.sleep(args.get("work_s", 0.0))
    return {"began": began, "lag": lag, "device": device, "worker": worker}


def fail_before_start(device, worker, args, start):
    if worker["worker"] == args["failing"]:
        raise RuntimeError("operands could not be allocated on %s" % device["kind"])
    return stamp(device, worker, args, start)


def die_before_start(device, worker, args, start):
    if worker["worker"] == args["failing"]:
        os._exit(9)
    return stamp(device, worker, args, start)


def hang_after_start(device, worker, args, start):
    result = stamp(device, worker, args, start)
    if worker["worker"] == args["failing"]:
        time.sleep(600)
    return result
'''


@pytest.fixture(name="probes_dir")
def fixture_probes_dir(tmp_path):
    (tmp_path / "probelib").symlink_to(os.path.join(PROBES, "probelib"))
    (tmp_path / "fake_tasks.py").write_text(TASKS)
    return str(tmp_path)


def cpu_workers(count):
    return together.plan_workers([{"kind": "cpu", "index": 0}], count)


def test_workers_are_planned_device_by_device_with_their_share():
    workers = together.plan_workers([{"kind": "cuda", "index": 0}, {"kind": "cuda", "index": 1}], 2)
    assert [(w.worker, w.device_index, w.slot, w.workers_on_device) for w in workers] == [(0, 0, 0, 2), (1, 0, 1, 2), (2, 1, 0, 2), (3, 1, 1, 2)]


def test_one_worker_is_not_a_together_phase_and_says_why():
    assert "one GPU and workers_per_gpu 1" in together.not_needed(together.plan_workers([{"kind": "cuda", "index": 0}], 1))
    assert together.not_needed([]) == "no device to measure"
    assert together.not_needed(cpu_workers(2)) is None


def test_workers_prepared_unequally_start_together(probes_dir):
    # worker 0 prepares for 1.5 s, worker 1 at once: without the barrier they would begin 1.5 s apart
    record = together.run_together("fake_tasks:stamp", {"prepare_s": [1.5, 0.0], "work_s": 0.2}, cpu_workers(2), 60,
                                   devices=[{"kind": "cpu", "index": 0, "name": "host"}], probes_dir=probes_dir)
    assert [worker["status"] for worker in record["workers"]] == ["ok", "ok"], record
    began = [worker["result"]["began"] for worker in record["workers"]]
    assert abs(began[0] - began[1]) < 0.1, began
    assert record["released_together"] is True and 0 <= record["start_spread_ms"] < 100
    assert record["workers"][1]["result"]["device"]["name"] == "host"
    assert record["workers"][1]["result"]["worker"] == {"worker": 1, "kind": "cpu", "device_index": 0, "slot": 1, "workers_on_device": 2}
    assert all(worker["duration_s"] >= 0.2 for worker in record["workers"])


def test_a_worker_that_raises_before_its_start_is_its_own_error_and_the_others_run(probes_dir):
    args = {"prepare_s": [0.0, 0.0, 0.0], "failing": 1}
    record = together.run_together("fake_tasks:fail_before_start", args, cpu_workers(3), 60, probes_dir=probes_dir)
    assert [worker["status"] for worker in record["workers"]] == ["ok", "error", "ok"]
    assert record["workers"][1]["error"] == "RuntimeError: operands could not be allocated on cpu"
    assert "result" not in record["workers"][1] and "error" not in record["workers"][0]
    assert record["released_together"] is True


def test_a_worker_that_dies_before_its_start_does_not_hold_the_others_at_the_barrier(probes_dir):
    started = time.monotonic()
    record = together.run_together("fake_tasks:die_before_start", {"prepare_s": [0.0, 0.0], "failing": 0}, cpu_workers(2), 60,
                                   probes_dir=probes_dir)
    assert time.monotonic() - started < 30  # the barrier's own limit would be 30 s (half the deadline)
    assert record["workers"][0]["status"] == "error" and "exited with code 9 without a result" in record["workers"][0]["error"]
    assert record["workers"][1]["status"] == "ok" and record["workers"][1]["start_lag_ms"] is not None


def test_a_worker_still_running_at_the_deadline_is_killed_and_the_others_keep_their_results(probes_dir):
    started = time.monotonic()
    record = together.run_together("fake_tasks:hang_after_start", {"prepare_s": [0.0, 0.0], "failing": 1}, cpu_workers(2), 8,
                                   probes_dir=probes_dir)
    assert time.monotonic() - started < 20
    assert record["workers"][0]["status"] == "ok"
    assert record["workers"][1] == {**record["workers"][1], "status": "error", "error": "still running at the deadline: killed"}


def test_a_task_that_cannot_be_imported_is_each_workers_error(probes_dir):
    record = together.run_together("fake_tasks:no_such_function", {}, cpu_workers(2), 30, probes_dir=probes_dir)
    assert [worker["status"] for worker in record["workers"]] == ["error", "error"]
    assert record["workers"][0]["error"].startswith("AttributeError")
    assert record["released_together"] is False and record["start_spread_ms"] is not None
