"""The record every measuring probe keeps of the GPUs' other compute processes (probelib/measure/foreign_processes.py):
a fake NVML and a fake /proc, then the runner's wrapping of collect."""
import os
from types import SimpleNamespace

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_problems
from probelib import runner
from probelib.measure import foreign_processes
from probelib.measure.foreign_processes import ForeignProcessWatch
from probelib.nvml.access import NvmlReader

MIB = 1 << 20
RECORD_SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "common.schema.json#/$defs/foreign_gpu_processes"}
JOB, OWN_CHILD, HIDDEN, LATE = 2172, 31001, 4455, 5566


class FakeNvml:
    """One GPU; each call of the compute listing returns the next of ``listings`` (the last one repeats)."""

    def __init__(self, listings):
        self.listings = list(listings)
        self.calls = 0

    def nvmlDeviceGetUUID(self, handle):
        return "GPU-8eb0778b-0000"

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        listing = self.listings[min(self.calls, len(self.listings) - 1)]
        self.calls += 1
        if isinstance(listing, Exception):
            raise listing
        return [SimpleNamespace(pid=pid, usedGpuMemory=int(mib * MIB)) for pid, mib in listing]


def fake_session(module, usable=True, reason=""):
    return SimpleNamespace(usable=usable, reason=reason, reader=NvmlReader(module), handles=["handle0"] if usable else [],
                           close=lambda: None)


def fake_proc(tmp_path, processes):
    """processes: {pid: (name, parent pid)}; self/status names this process."""
    root = tmp_path / "proc"
    for pid, (name, parent) in processes.items():
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "comm").write_text(name + "\n")
        (root / str(pid) / "stat").write_text("%d (%s) S %d 1 1 0\n" % (pid, name, parent))
    (root / "self").mkdir(parents=True, exist_ok=True)
    (root / "self" / "status").write_text("Name:\tpython3\nNSpid:\t%d\n" % os.getpid())
    return str(root)


def watched(tmp_path, listings, processes):
    module = FakeNvml(listings)
    watch = ForeignProcessWatch(lambda: fake_session(module), interval_s=3600, proc_root=fake_proc(tmp_path, processes))
    return watch.start().finish()


def test_a_job_before_and_during_is_foreign_with_its_most_memory(tmp_path):
    record = watched(tmp_path, [[(JOB, 60000.0)], [(JOB, 64307.2), (os.getpid(), 900.0), (OWN_CHILD, 800.0)]],
                     {JOB: ("python3", 1), OWN_CHILD: ("python3 (worker)", os.getpid())})
    assert schema_problems(record, RECORD_SCHEMA, "record") == []
    (gpu,) = record["gpus"]
    assert gpu["uuid"] == "GPU-8eb0778b-0000" and gpu["nvml_index"] == 0
    assert gpu["before"] == [{"pid": JOB, "name": "python3", "used_memory_mib": 60000.0}]
    # the probe and its worker child are its own; the job keeps the most memory seen
    assert gpu["during"] == [{"pid": JOB, "name": "python3", "used_memory_mib": 64307.2}]
    assert gpu["unattributed"] == [] and record["listings"] == 2 and os.getpid() in record["own_pids"]


def test_a_pid_first_seen_during_that_proc_does_not_show_is_unattributed_not_foreign(tmp_path):
    record = watched(tmp_path, [[(HIDDEN, 10.0)], [(HIDDEN, 10.0), (LATE, 70000.0)]], {})
    (gpu,) = record["gpus"]
    # listed before the probe had a CUDA context: foreign whatever the PID namespace
    assert [entry["pid"] for entry in gpu["before"]] == [HIDDEN]
    assert [entry["pid"] for entry in gpu["during"]] == [HIDDEN]
    (late,) = gpu["unattributed"]
    assert late["pid"] == LATE and "not visible here" in late["name"]["unavailable"]


def test_an_idle_gpu_records_empty_lists(tmp_path):
    record = watched(tmp_path, [[], [(os.getpid(), 500.0)]], {})
    assert record["gpus"][0]["before"] == [] and record["gpus"][0]["during"] == []


def test_without_nvml_the_record_says_why(tmp_path):
    watch = ForeignProcessWatch(lambda: fake_session(FakeNvml([[]]), usable=False, reason="NVML library not found"))
    assert watch.start().finish() == {"unavailable": "NVML library not found"}


def test_a_listing_that_fails_is_unavailable_and_never_raises(tmp_path):
    error = type("NVMLError", (Exception,), {"value": 999})("Unknown Error")
    record = watched(tmp_path, [error], {})
    (gpu,) = record["gpus"]
    assert "Unknown Error" in gpu["before"]["unavailable"] and "Unknown Error" in gpu["during"]["unavailable"]
    assert schema_problems(record, RECORD_SCHEMA, "record") == []


def test_the_runner_puts_the_record_in_the_data_of_a_measuring_probe_only(monkeypatch, tmp_path):
    record = {"unavailable": "no NVML in this test"}
    monkeypatch.setattr(foreign_processes, "watch", lambda: SimpleNamespace(finish=lambda: record))

    def collect(params):
        return runner.ProbeResult("ok", {"devices": []})

    out = tmp_path / "out.json"
    runner.main("membw", "test", collect, argv=["--out", str(out)], spec={}, measures_gpus=True)
    assert '"foreign_gpu_processes": {\n      "unavailable": "no NVML in this test"' in out.read_text()
    runner.main("health", "test", collect, argv=["--out", str(out)], spec={})
    assert "foreign_gpu_processes" not in out.read_text()


def test_a_probe_error_keeps_the_record(monkeypatch, tmp_path):
    record = {"unavailable": "no NVML in this test"}
    monkeypatch.setattr(foreign_processes, "watch", lambda: SimpleNamespace(finish=lambda: record))

    def collect(params):
        raise runner.ProbeError("the GPU is full", {"free_mib": 3})

    out = tmp_path / "out.json"
    runner.main("gemm", "test", collect, argv=["--out", str(out)], spec={}, measures_gpus=True)
    assert '"foreign_gpu_processes"' in out.read_text() and '"free_mib": 3' in out.read_text()


def test_a_listing_that_hangs_in_nvml_never_holds_the_probe(tmp_path):
    import threading
    release = threading.Event()

    class Hanging(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, handle):
            if self.calls >= 1:
                release.wait(30)
            return super().nvmlDeviceGetComputeRunningProcesses(handle)

    module = Hanging([[(JOB, 10.0)]])
    watch = ForeignProcessWatch(lambda: fake_session(module), interval_s=0.05, proc_root=fake_proc(tmp_path, {JOB: ("python3", 1)}))
    saved = foreign_processes.JOIN_WAIT_S
    foreign_processes.JOIN_WAIT_S = 0.2
    try:
        record = watch.start().finish()
    finally:
        foreign_processes.JOIN_WAIT_S = saved
        release.set()
    assert "did not return" in record["unavailable"]
