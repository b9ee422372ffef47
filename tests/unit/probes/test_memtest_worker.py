"""One memtest worker, called directly as the together runner calls it (device, worker, args, start) on the CPU: the
budget, every pattern at least once, the start line, the injected error; and the sizing arithmetic of a GPU worker."""
import pytest

from probe_packages.memtest import worker as memtest_worker
from probe_packages.memtest.plan import MIB, check_params, gpu_buffer_bytes, resolve_plan
from probelib.params import ParameterError, probe_defaults

torch = pytest.importorskip("torch")

CPU = {"kind": "cpu", "index": 0, "torch_device": "cpu", "name": "test CPU"}


def plan(**given):
    params = probe_defaults("memtest")
    params.update(cpu_mib=4, cpu_chunk_mib=1, cpu_budget_s=0.3)
    params.update(given)
    check_params(params)
    return resolve_plan(params, "cpu")


def worker(number=0, slot=0, on_device=1):
    return {"worker": number, "kind": "cpu", "device_index": 0, "slot": slot, "workers_on_device": on_device}


def run(the_plan, the_worker=None):
    started = []
    result = memtest_worker.run_worker(CPU, the_worker or worker(), {"plan": the_plan, "free_bytes": {}},
                                       lambda: started.append(1) or 0.0)
    assert started == [1]  # the start line is passed once, after the buffer is allocated
    return result


def test_passes_repeat_until_the_budget_and_every_pattern_runs():
    result = run(plan(cpu_budget_s=0.5))
    assert result["errors"] == 0 and result["error_ranges"] == [] and result["injected"] is None
    assert result["buffer_bytes"] == 4 * MIB and result["chunk_bytes"] == MIB and result["chunks"] == 4
    assert [entry["pattern"] for entry in result["patterns"]] == ["walking_ones", "walking_zeros", "address", "random"]
    passes = [entry["passes"] for entry in result["patterns"]]
    assert min(passes) >= 1 and result["rounds"] >= 1 and max(passes) - min(passes) <= 1
    assert "budget" in result["stopped"]
    for entry in result["patterns"]:
        assert entry["bytes_written"] == entry["bytes_checked"] == entry["passes"] * 4 * MIB
    assert result["bytes_written"] == sum(entry["bytes_written"] for entry in result["patterns"])
    assert result["gbps"] == pytest.approx(2 * result["bytes_written"] / result["test_s"] / 1e9, rel=1e-3)


class Clock:
    """time.perf_counter for run_patterns: each pass of a pattern takes the seconds the test gives it."""

    def __init__(self, seconds):
        self.now = 0.0
        self.seconds = seconds

    def perf_counter(self):
        return self.now

    def run_pass(self, test, name, pass_index, flip, ranges_left):
        self.now += self.seconds[name]
        return {"pattern": name, "pass": pass_index, "seconds": self.seconds[name], "errors": 0, "ranges": [],
                "ranges_left_out": 0, "injected": None}


@pytest.mark.parametrize("seconds, passes, rounds, test_s", [
    # 0.1 s a pass in a 1 s budget: one round, then passes while the same pattern's last one still fits: ends at 1.0 s
    (0.1, [3, 3, 2, 2], 2, 1.0),
    # the first round alone takes 2 s: it runs whole, and nothing after it
    (0.5, [1, 1, 1, 1], 1, 2.0),
])
def test_a_pass_starts_only_when_its_patterns_last_pass_still_fits_in_the_budget(monkeypatch, seconds, passes, rounds, test_s):
    clock = Clock({name: seconds for name in ("walking_ones", "walking_zeros", "address", "random")})
    monkeypatch.setattr(memtest_worker, "run_pass", clock.run_pass)
    monkeypatch.setattr(memtest_worker.time, "perf_counter", clock.perf_counter)
    test = type("Test", (), {"buffer_bytes": MIB})()
    result = memtest_worker.run_patterns(test, plan(cpu_budget_s=1.0), None)
    assert [entry["passes"] for entry in result["patterns"]] == passes
    assert (result["rounds"], result["test_s"]) == (rounds, test_s)
    assert result["stopped"].endswith("would end past the 1 s budget")


def test_a_budget_too_small_for_one_round_still_runs_each_pattern_once():
    result = run(plan(cpu_budget_s=1e-6, patterns=["random", "address"]))
    assert [(entry["pattern"], entry["passes"]) for entry in result["patterns"]] == [("random", 1), ("address", 1)]
    assert result["rounds"] == 1


def test_two_workers_on_the_device_each_take_half():
    result = run(plan(cpu_mib=8), worker(1, 1, 2))
    assert result["buffer_bytes"] == 4 * MIB


def test_the_injected_bit_is_found_in_the_named_workers_buffer_only():
    the_plan = plan(inject_offset_bytes=3 * MIB + 17, inject_bit=6, inject_worker=1, inject_pattern="address")
    assert run(the_plan, worker(0, 0, 2))["errors"] == 0
    result = run(dict(the_plan, cpu_mib=8), worker(1, 1, 2))
    assert result["errors"] == 1
    (found,) = result["error_ranges"]
    assert (found["pattern"], found["pass"], found["error_bytes"], found["chunk_bytes"]) == (
        "address", 0, [3 * MIB + 16, 3 * MIB + 24], [3 * MIB, 4 * MIB])
    assert found["first_expected"] == "0x%016x" % (3 * MIB + 16)
    assert found["first_differing_bits"] == "0x%016x" % (1 << (8 + 6))
    assert result["injected"]["offset_bytes"] == 3 * MIB + 17


def test_an_injected_offset_beyond_the_buffer_flips_nothing_and_says_so():
    result = run(plan(inject_offset_bytes=64 * MIB))
    assert result["errors"] == 0
    assert "lies beyond this worker's 4194304-byte buffer" in result["injected"]["unavailable"]


def test_an_injected_pattern_that_does_not_run_is_refused():
    params = probe_defaults("memtest")
    params.update(inject_offset_bytes=0, inject_pattern="random", patterns=["address"])
    with pytest.raises(ParameterError, match="inject_pattern 'random' is not among the patterns run"):
        check_params(params)


def test_a_gpu_worker_takes_its_share_of_the_free_memory_after_the_margin():
    free = 140 * 1024 * MIB
    assert gpu_buffer_bytes(free, 1, 90.0, 2048.0) == int((free - 2048 * MIB) * 0.9) // 512 * 512
    assert gpu_buffer_bytes(free, 2, 90.0, 2048.0) == int((free - 2048 * MIB) * 0.45) // 512 * 512
    assert gpu_buffer_bytes(MIB, 1, 90.0, 2048.0) == 0
    gpu_plan = resolve_plan(probe_defaults("memtest"), "cuda")
    device = {"kind": "cuda", "index": 0}
    wanted, note = memtest_worker.planned_bytes(gpu_plan, device, worker(), free, free)
    assert wanted == gpu_buffer_bytes(free, 1, 90.0, 2048.0) and note == ""
    # the worker found less free than the probe read (another worker or process allocated meanwhile): it takes what is there
    smaller, note = memtest_worker.planned_bytes(gpu_plan, device, worker(), free, 10 * 1024 * MIB)
    assert smaller < 10 * 1024 * MIB and "planned" in note and "10240 MiB free" in note


def test_the_free_memory_basis_is_the_probes_nvml_read_before_the_workers():
    device = {"kind": "cuda", "index": 1}
    assert memtest_worker.free_basis({"free_bytes": {"1": 5}}, device, 3)[0] == 5
    assert memtest_worker.free_basis({"free_bytes": {}}, device, 3) == (
        3, "torch.cuda.mem_get_info in this worker before it allocated (NVML gave no free memory)")
    assert memtest_worker.free_basis({"free_bytes": {"0": 5}}, CPU, 3)[0] == 3
