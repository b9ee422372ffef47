"""gemm's wait for an idle GPU before each burst window (probe_packages/gemm/power_run.py) on a fake NVML and a fake /proc.

On the H100 rig a leftover job (a bf16 matmul loop) kept the GPU at its power limit: every burst window and its retry
waited the whole bound for an idle that never came, and gemm ran for minutes. A GPU another job computes on is waited
for once per run; a GPU that is slow to cool with no other job on it is waited for every time, as before."""
import os
from types import SimpleNamespace

from probe_packages.gemm import power_run
from probe_packages.gemm.power_run import PowerStateRun
from probelib.nvml.access import NvmlReader
from test_foreign_processes import fake_proc  # pylint: disable=import-error

MIB = 1 << 20
JOB = 2172
SETTINGS = {"idle_power_fraction": 0.3, "idle_wait_max_s": 0.3, "sampling_interval_s": 0.01}


class FakeNvml:
    def __init__(self, processes):
        self.processes = processes

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 700000

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return [SimpleNamespace(pid=pid, usedGpuMemory=int(mib * MIB)) for pid, mib in self.processes]


class FakeReads:
    """A GPU drawing ``power_w`` for ever."""

    def __init__(self, power_w, processes):
        self.reader = NvmlReader(FakeNvml(processes))
        self.handle = "handle0"
        self.power_w = power_w

    def sample(self):
        return [1980, 2619, self.power_w, 55, 0, 100], {}


def run_on(tmp_path, power_w, processes, names):
    reads = FakeReads(power_w, processes)
    return PowerStateRun(None, {}, None, reads, dict(SETTINGS), proc_root=fake_proc(tmp_path, names))


def test_a_gpu_another_job_computes_on_is_waited_for_once(tmp_path):
    run = run_on(tmp_path, 690.0, [(JOB, 56832.0), (os.getpid(), 900.0)], {JOB: ("python3", 1)})
    first = run.wait_for_idle(0.05)
    assert first["reached_idle"] is False and first["waited_s"] >= 0.3
    assert [process["pid"] for process in run.busy_with] == [JOB]  # the probe's own context is not the job
    second = run.wait_for_idle(0.05)
    assert second["reached_idle"] is False and second["waited_s"] == 0.0
    assert "python3 (pid 2172)" in second["not_waited"] and "not a burst from idle" in second["not_waited"]


def test_a_gpu_slow_to_cool_with_no_other_job_is_waited_for_every_time(tmp_path):
    run = run_on(tmp_path, 690.0, [(os.getpid(), 900.0)], {})
    for unused_window in range(2):
        waited = run.wait_for_idle(0.05)
        assert waited["reached_idle"] is False and waited["waited_s"] >= 0.3 and "not_waited" not in waited
    assert run.busy_with == []


def test_an_idle_gpu_is_not_listed_for_jobs(tmp_path):
    run = run_on(tmp_path, 70.0, [(JOB, 56832.0)], {JOB: ("python3", 1)})
    waited = run.wait_for_idle(0.05)
    assert waited["reached_idle"] is True and run.busy_with == []


def test_a_window_of_a_few_microseconds_is_never_recorded_as_zero_seconds():
    """CI on a loaded machine: a fake product's sustained window of 0.00004 s was recorded as duration_s 0.0, which the
    schema refuses (exclusiveMinimum 0), and the result was invalid."""
    assert power_run.window_seconds(0.00004) == 4e-05
    assert power_run.window_seconds(0.000012345) == 1.2e-05
    assert power_run.window_seconds(0.0289123) == 0.0289 and power_run.window_seconds(2.5) == 2.5
