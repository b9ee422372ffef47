"""membw plan: parameters refused by its spec or across parameters, the size plans, the memory bound, iterations per point, the bandwidth formula."""
import pytest

from probe_packages.membw.plan import CPU_SIZES_MIB, GPU_SIZES_MIB, MIB, bandwidth_gbps, check_params, fits, margin_bytes, resolve_plan
from probelib.measure.timing import iterations_for
from probelib.params import load_spec, probe_defaults, problems
from probelib.runner import ParameterError

DEFAULTS = probe_defaults("membw")


def test_defaults_pass_and_every_parameter_is_documented():
    check_params(dict(DEFAULTS))
    for name, schema in load_spec("membw")["properties"].items():
        assert schema["description"], name


@pytest.mark.parametrize("key, value", [
    ("repeats", 2.5), ("repeats", 0), ("device", "tpu"), ("dtype", "float64"), ("sizes_mib", [0]),
    ("sizes_mib", [1.5]), ("tolerance_pct", -1.0), ("target_point_ms", 0.0), ("safety_margin_pct", 100.0),
    ("min_plateau_points", 0),
])
def test_bad_values_are_refused_by_the_spec(key, value):
    assert problems(load_spec("membw"), {key: value})


def test_fewer_max_than_min_iterations_is_refused_across_parameters():
    assert problems(load_spec("membw"), {"max_iterations": 1}) == []
    with pytest.raises(ParameterError, match="max_iterations must be >= min_iterations"):
        check_params(dict(DEFAULTS, max_iterations=1))


def test_plans_per_kind_and_quick():
    params = dict(DEFAULTS)
    gpu = resolve_plan(params, "cuda")
    assert gpu["name"] == "gpu-default" and gpu["sizes_mib"] == GPU_SIZES_MIB == [4, 16, 64, 256, 1024, 4096]
    assert gpu["target_point_ms"] == 100.0 and gpu["element_bytes"] == 4
    cpu = resolve_plan(params, "cpu")
    assert cpu["name"] == "cpu-default" and cpu["sizes_mib"] == CPU_SIZES_MIB
    params.update({"quick": True, "sizes_mib": [64, 8, 64], "dtype": "uint8"})
    quick = resolve_plan(params, "cuda")
    assert quick["name"] == "custom-quick" and quick["quick"] is True
    assert quick["sizes_mib"] == [8, 64] and quick["element_bytes"] == 1
    assert quick["target_point_ms"] == DEFAULTS["quick_target_point_ms"]


def test_fits_needs_two_buffers_and_the_larger_margin():
    free = 10 * 1024 * MIB  # 10 GiB free: margin max(1024 MiB, 5 % = 512 MiB) = 1024 MiB
    assert margin_bytes(free, 1024, 5) == 1024 * MIB
    assert fits(4096, free, 1024, 5) == (True, "")  # 8192 + 1024 <= 10240
    assert fits(4608, free, 1024, 5)[0]  # 9216 + 1024 = 10240: just fits
    ok, reason = fits(4700, free, 1024, 5)  # 9400 + 1024 > 10240
    assert not ok
    assert reason == "two buffers of 4700 MiB (9400 MiB) plus a safety margin of 1024 MiB exceed the 10240 MiB free"
    # 140 GiB free: the 5 % margin (7168 MiB) is the larger one
    assert margin_bytes(140 * 1024 * MIB, 1024, 5) == 7168 * MIB
    assert fits(4096, 140 * 1024 * MIB, 1024, 5)[0]


def test_iterations_for():
    assert iterations_for(0.1, 0.002, 2, 20000) == 50       # 4096 MiB at ~2 ms a copy
    assert iterations_for(0.1, 0.000005, 2, 20000) == 20000  # 5 us copies: capped
    assert iterations_for(0.1, 0.5, 2, 20000) == 2          # slower than the target: the minimum
    assert iterations_for(0.1, 0.0, 2, 100) == 100


def test_bandwidth_counts_read_plus_written():
    # the H200 figure from the brief: a 4096 MiB copy moves 2 x 4.295 GB = 8.59 GB; in 2.0 ms that is 4295 GB/s
    assert bandwidth_gbps(4096 * MIB, 0.002) == pytest.approx(2 * 4294967296 / 0.002 / 1e9)
    assert bandwidth_gbps(4096 * MIB, 0.002) == pytest.approx(4294.967296)
    assert bandwidth_gbps(1000, 1.0) == pytest.approx(2e-6)
