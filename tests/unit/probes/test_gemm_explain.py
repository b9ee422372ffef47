"""The gemm probe's explanations: derived from dims, tiles against SMs, time per call and clocks."""
import pytest

from probe_packages.gemm import explain as gemm_explain
from probe_packages.gemm.explain import explain, output_tiles, tile_fill_pct, wave_loss_pct


def _explain(**overrides):
    facts = dict(kind="cuda", classification="compute-bound", m=8192, n=8192, k=8192, dtype="bf16", alignment_elements=8,
                 input_bytes=2, tflops=790.0, attainable_tflops=989.0, bandwidth_gbps=4000.0, bytes_moved=402653184,
                 time_per_iteration_s=1.39e-3, sm_count=132, l2_cache_bytes=62914560)
    facts.update(overrides)
    return explain(**facts)


def test_tile_arithmetic():
    assert output_tiles(8192, 8192) == 4096
    assert output_tiles(1, 28672) == 224
    assert output_tiles(8191, 8193) == 64 * 65
    assert tile_fill_pct(8192, 8192) == 100.0
    assert tile_fill_pct(8191, 8193) == pytest.approx(100.0 * 8191 * 8193 / (8192 * 8320))
    assert wave_loss_pct(264, 132) == 0.0
    assert wave_loss_pct(133, 132) == pytest.approx(100.0 * (1 - 133 / 264))


def test_unremarkable_shape_gets_a_plain_sentence():
    assert _explain() == "80 % of its compute bound (989 TFLOP/s)."


def test_awkward_shape_names_alignment_and_tile_quantisation():
    text = _explain(m=8191, n=8193, k=8191, tflops=420.0)
    assert text.startswith("42 % of its compute bound (989 TFLOP/s): ")
    assert "K=8191 and N=8193 are not a multiple of 8 (16 bytes of bf16)" in text
    assert "tile quantisation: M=8191, N=8193, K=8191 are not a multiple of 128" in text


def test_multiple_of_16_but_not_128_is_tile_quantisation_only():
    text = _explain(m=8208, n=8208, k=8208, tflops=500.0)
    assert "multiple of 8" not in text
    assert "tile quantisation: M=8208, N=8208, K=8208 are not a multiple of 128" in text


def test_too_few_tiles_to_fill_the_sms():
    text = _explain(m=1, n=8192, k=8192, tflops=100.0, time_per_iteration_s=1e-3)
    assert "too few tiles to fill 132 SMs: M=1 gives 64 output tiles of 128x128" in text


def test_wave_quantisation():
    # 133 tiles on 132 SMs: 2 waves, the second 99 % empty
    text = _explain(m=128 * 7, n=128 * 19, k=8192, tflops=300.0)
    assert "wave quantisation: 133 tiles on 132 SMs need 2 waves, the last 99 % empty" in text


def test_launch_overhead_and_clocks():
    text = _explain(m=1024, n=1024, k=1024, tflops=200.0, time_per_iteration_s=10.7e-6,
                    clock_event_names=("sw_power_cap",), sm_clock_mhz=1500)
    assert "launch overhead dominates: one matmul takes 10.7 us" in text
    assert "the clocks were held down during the run (sw_power_cap, SM clock 1500 MHz)" in text


def test_nothing_visible_says_so():
    text = _explain(tflops=400.0)
    assert "no tiling, alignment, size or clock cause shows in the numbers" in text


def test_memory_bound_shapes():
    # operands within the L2: above the memory bound, and why
    above = _explain(classification="memory-bound", m=1, n=1024, k=1024, tflops=1.0, attainable_tflops=0.5,
                     bytes_moved=2 * (1024 + 1024 * 1024 + 1024), time_per_iteration_s=2e-6)
    assert above.startswith("200 % of its memory bound: its 2.0 MiB of operands fit in the 60 MiB L2 cache")
    # a slow matrix-vector shape: the bandwidth it drew
    slow = _explain(classification="memory-bound", m=1, n=28672, k=8192, tflops=1.0, attainable_tflops=4.0,
                    bytes_moved=469835776, time_per_iteration_s=469835776 / 1000e9)
    assert "25 % of its memory bound" in slow
    assert "it drew 1000 GB/s of the 4000 GB/s the ridge assumes" in slow
    # on the CPU the tile rules do not apply
    cpu = _explain(kind="cpu", m=8191, n=8193, k=8191, tflops=0.01, attainable_tflops=0.1, sm_count=None)
    assert "tile" not in cpu and "no tiling" in cpu


def test_far_below_threshold_is_sixty_percent():
    assert gemm_explain.FAR_BELOW_PCT == 60.0
    assert ":" not in _explain(tflops=0.6 * 989.0)
    assert "no tiling" in _explain(tflops=0.59 * 989.0)


def test_a_compute_bound_shape_short_of_peak_names_the_power_cap_that_held_its_clock():
    """As measured on the H200 rig: 668 of 989 TFLOP/s at SM 1485 MHz under sw_power_cap."""
    from probe_packages.gemm.explain import explain

    sentence = explain(kind="cuda", classification="compute-bound", m=8192, n=8192, k=8192, dtype="bf16", alignment_elements=8,
                       input_bytes=2, tflops=668.5, attainable_tflops=989.0, bandwidth_gbps=4274.7, bytes_moved=3 * 8192 * 8192 * 2,
                       time_per_iteration_s=0.001645, sm_count=132, clock_event_names=["sw_power_cap"], sm_clock_mhz=1485)
    assert sentence == ("68 % of its compute bound (989 TFLOP/s): the clocks were held down during the run "
                        "(sw_power_cap, SM clock 1485 MHz).")
    near_peak = explain(kind="cuda", classification="compute-bound", m=8192, n=8192, k=8192, dtype="bf16", alignment_elements=8,
                        input_bytes=2, tflops=950.0, attainable_tflops=989.0, bandwidth_gbps=4274.7, bytes_moved=3 * 8192 * 8192 * 2,
                        time_per_iteration_s=0.00116, sm_count=132, clock_event_names=["sw_power_cap"], sm_clock_mhz=1900)
    assert near_peak == "96 % of its compute bound (989 TFLOP/s)."
