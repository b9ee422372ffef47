"""The p2p plan: parameters refused by its spec, and the sizes lowered to fit free GPU memory (hand-computed)."""
import pytest

from probe_packages.p2p.plan import MIB, fit_sizes, make_plan
from probelib.params import load_spec, probe_defaults, problems

GIB = 1 << 30


def test_every_size_fits_on_an_idle_h200():
    # 2 buffers per GPU, 40 % of 139 GiB free = 55.6 GiB: 2 x 1024 MiB is far below
    fitted = fit_sizes([1, 4, 16, 64, 256, 1024], [139 * GIB, 140 * GIB], 2)
    assert fitted["sizes_bytes"] == [MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, GIB]
    assert fitted["limited_by"] == "request" and fitted["dropped_mib"] == []
    assert fitted["budget_bytes"] == int(139 * GIB * 0.4)


def test_the_least_free_gpu_lowers_the_sizes():
    # GPU 1 has 1000 MiB free: 40 % = 400 MiB, shared by 2 buffers = 200 MiB at most -> 256 and 1024 go
    fitted = fit_sizes([1024, 1, 256, 64, 4, 16, 16], [100 * GIB, 1000 * MIB], 2)
    assert fitted["sizes_bytes"] == [MIB, 4 * MIB, 16 * MIB, 64 * MIB]
    assert fitted["limited_by"] == "device_memory" and fitted["dropped_mib"] == [256, 1024]
    assert "256, 1024 MiB left out" in fitted["note"] and "(1000 MiB)" in fitted["note"]


def test_when_nothing_fits_the_largest_whole_mib_that_does_is_used():
    # 100 MiB free: 40 % = 40 MiB, one buffer per GPU -> 40 MiB
    fitted = fit_sizes([64, 256], [100 * MIB, 100 * MIB], 1)
    assert fitted["sizes_bytes"] == [40 * MIB] and fitted["dropped_mib"] == [64, 256]
    assert "the largest whole MiB that fits (40) is used instead" in fitted["note"]
    with pytest.raises(ValueError, match="not even 1 MiB"):
        fit_sizes([1], [2 * MIB], 2)  # 0.8 MiB / 2 buffers


def test_plan_defaults_quick_and_unidirectional():
    plan = make_plan(dict(probe_defaults("p2p")), "torch.cuda._sleep", [80 * GIB, 80 * GIB])
    assert plan["sizes_mib_requested"] == [1, 4, 16, 64, 256, 1024] and plan["repeats"] == 3
    assert (plan["iterations"], plan["warmup"], plan["latency_copies"], plan["latency_size_bytes"]) == (10, 2, 200, 8)
    assert plan["buffers_per_gpu"] == 2 and plan["least_free_memory_bytes"] == 80 * GIB
    quick = make_plan(dict(probe_defaults("p2p"), quick=True, bidirectional=False), {"unavailable": "no spin"}, [80 * GIB] * 2)
    assert quick["sizes_bytes"] == [64 * MIB, 256 * MIB] and quick["repeats"] == 1 and quick["buffers_per_gpu"] == 1
    unfitted = make_plan(dict(probe_defaults("p2p")), "torch.cuda._sleep")
    assert unfitted["sizes_bytes"][-1] == GIB and "unavailable" in unfitted["least_free_memory_bytes"]


@pytest.mark.parametrize("key,value,words", [
    ("device", "cpu", "must be one of"), ("sizes_mib", [], "sizes_mib"), ("sizes_mib", [1, 2.5], "sizes_mib"),
    ("iterations", 0, "iterations"), ("repeats", 1.5, "repeats"), ("warmup", -1, "warmup"),
    ("latency_copies", True, "latency_copies"), ("latency_size_bytes", 0, "latency_size_bytes")])
def test_bad_parameters_are_refused(key, value, words):
    found = problems(load_spec("p2p"), {key: value})
    assert len(found) == 1 and words in found[0], found
