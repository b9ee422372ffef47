"""Each measurement probe's declaration reads its own data layout once, into judge/measurement.py's records; its metrics
and gemm's derived memory bandwidth come from those records."""
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.measurement import Device, Measurement, metrics_of
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.gemm.judging import gemm_measurements
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.hostbw.judging import hostbw_measurements
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.membw.judging import membw_measurements
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declaration, judging_of

from helpers import H200X1_RUN, recorded

GPU0 = "GPU-8eb0778b-d464-b2c2-c1ff-53da4ffb64cd"
CUDA0 = {"kind": "cuda", "index": 0, "uuid": GPU0, "name": "NVIDIA H200"}
CPU = {"kind": "cpu", "index": 0, "name": "CPU", "uuid": {"unavailable": "a CPU has no UUID"}}


def _spread_pct(values):
    return round(100.0 * (max(values) - min(values)) / sorted(values)[len(values) // 2], 2)


def membw_entry(device=None, **fields):
    """The rig's recorded membw entry of GPU 0 (GPU0), its plateau 4245.95 GB/s and its repeats at 4096 MiB."""
    entry = recorded("membw")["data"]["devices"][0]
    samples = [4232.86, 4279.98, 4280.52]
    entry["plateau"]["plateau_gbps"] = 4245.95
    entry["headline"] = {"bandwidth_gbps": 4245.95, "source": "plateau", "sizes_mib": [256, 1024, 4096], "no_plateau": False}
    entry["repeats"].update(size_mib=4096, bandwidths_gbps=samples, median_gbps=4279.98, cv_pct=0.64,
                            times_per_copy_s=[round(2 * 4096 * 2 ** 20 / (sample * 1e9), 9) for sample in samples])
    if device is not None:
        entry["device"] = device
    entry.update(fields)
    return entry


def test_membw_reads_the_headline_with_its_repeats():
    [found] = membw_measurements({"devices": [membw_entry()]})
    assert found == Measurement("membw.bandwidth_gbps", "GB/s", "higher", Device("cuda", 0, GPU0),
                                "the copy bandwidth (read + written) at 4096 MiB, repeated (plateau 4246 GB/s)",
                                value=4245.95, samples=(4232.86, 4279.98, 4280.52))
    assert found.device.label() == "GPU 0 (GPU-8eb0778b)"


def test_membw_a_failed_device_is_not_measured_with_the_probes_error():
    # off-schema on purpose (error a string, a headline without its number): the reader words what it is given
    [found] = membw_measurements({"devices": [membw_entry(error="no size was measured", headline={"source": "plateau"})]})
    assert found.value is None and found.missing.status == "error"
    assert found.missing.sentence == "the copy bandwidth plateau (read + written) was not measured: no size was measured"


def test_the_bandwidth_membw_gives_keys_the_cpu_path_as_cpu():
    # the CPU entry is a fragment on purpose (no memory or compute capability fields, a headline without its sizes)
    data = {"devices": [membw_entry(), membw_entry(device=CPU, headline={"bandwidth_gbps": 40.0, "source": "plateau"})]}
    gives = declaration("membw").gives
    assert gives(data) == {"bandwidth_gbps": {GPU0: 4245.95, "cpu": 40.0}, "missing": [], "sources": ["plateau"]}
    assert gives({}) == {"bandwidth_gbps": {}, "missing": [], "sources": []}
    # the metric is the GPU's alone
    assert [(metric.metric_id, metric.gpu_uuid, metric.value) for metric in judging_of("membw").metrics(data)] == [
        ("membw.bandwidth_gbps", GPU0, 4245.95)]


def hostbw_device(**fields):
    """The rig's recorded hostbw device GPU 0 (GPU0): pinned H2D at 55.45 GB/s, the pinned D2H copy failed, pinned
    bidirectional 98.9 GB/s, pageable H2D 8.5 GB/s."""
    device = recorded("hostbw")["data"]["devices"][0]
    copies = {(result["direction"], result["host_memory"]): result for result in device["results"]}
    results = []
    for direction, memory, median, repeats in (("h2d", "pinned", 55.45, [55.45, 55.458, 55.435]), ("bidirectional", "pinned", 98.9, None),
                                               ("h2d", "pageable", 8.5, None)):
        result = copies[(direction, memory)]
        factor = median / result["median_gbps"]
        result.update(median_gbps=median, repeats_gbps=repeats or [round(sample * factor, 3) for sample in result["repeats_gbps"]],
                      pct_of_link_raw=round(100.0 * median / device["pcie"]["link_raw_gbps"], 1))
        results.append(result)
    results.insert(1, {"direction": "d2h", "host_memory": "pinned", "error": "the copy failed"})
    device["results"] = results
    device.update(fields)
    return device


def test_hostbw_reads_the_pinned_copies_only():
    h2d, d2h = hostbw_measurements({"devices": [hostbw_device()]})
    assert (h2d.metric_id, h2d.what, h2d.value, h2d.samples) == ("hostbw.pinned_h2d_gbps", "pinned H2D copy", 55.45, (55.45, 55.458, 55.435))
    assert (d2h.metric_id, d2h.value, d2h.missing.sentence) == ("hostbw.pinned_d2h_gbps", None,
                                                                "pinned D2H copy was not measured: the copy failed")
    assert [metric.metric_id for metric in metrics_of(hostbw_measurements)({"devices": [hostbw_device()]})] == ["hostbw.pinned_h2d_gbps"]


def test_hostbw_a_failed_device_and_the_cpu_path():
    failed = hostbw_measurements({"devices": [dict(CUDA0, error="RuntimeError: no memory")]})
    assert [(found.metric_id, found.missing.sentence) for found in failed] == [
        ("hostbw.pinned_h2d_gbps", "pinned h2d was not measured: the device failed: RuntimeError: no memory"),
        ("hostbw.pinned_d2h_gbps", "pinned d2h was not measured: the device failed: RuntimeError: no memory")]
    # the CPU device is a fragment on purpose (no locality, buffer or PCIe fields, a copy with its median only)
    cpu = hostbw_measurements({"devices": [dict(CPU, results=[{"direction": "h2d", "host_memory": "pageable", "median_gbps": 9.0}])]})
    assert [(found.metric_id, found.device.kind, found.what, found.value) for found in cpu] == [
        ("hostbw.pinned_h2d_gbps", "cpu", "pinned H2D copy", None), ("hostbw.pinned_d2h_gbps", "cpu", "pinned D2H copy", None)]


def gemm_entry(sustained_limit_w=700.0):
    """The 1-GPU rig's recorded gemm entry (as GPU0): bf16 burst and sustained on square-8192 (sustained at a
    sustained_limit_w power limit), fp16 without the two states, fp8 not offered (and none of its shapes timed)."""
    entry = recorded("gemm", H200X1_RUN)["data"]["devices"][0]
    states = entry["dtypes"]["bf16"]["power_states"]
    for method, tflops, repeats in (("burst", 779.01, [781.21, 761.75, 779.01]), ("sustained", 662.4, [662.1, 662.4, 663.0])):
        state = states[method]
        state.update(tflops=tflops, repeats_tflops=repeats, spread_pct=_spread_pct(repeats))
        for window, rate in zip(state["windows"], repeats):
            window["tflops"] = rate
    states["burst"]["power_cap_reached"] = False
    states["sustained"]["power_limit_w"] = sustained_limit_w
    entry["dtypes"]["fp16"]["power_states"] = {"unavailable": "burst and sustained are measured for bf16, fp8_e4m3 only"}
    entry["dtypes"]["fp8_e4m3"] = {"unavailable": "fp8 needs compute capability 8.9, this GPU has 8.0"}
    entry["results"] = [result for result in entry["results"] if result["dtype"] != "fp8_e4m3"]
    return entry


def test_gemm_reads_each_state_with_its_power_limit():
    found = {measurement.metric_id: measurement for measurement in gemm_measurements({"devices": [gemm_entry()]})}
    assert sorted(found) == ["gemm.bf16_burst_tflops", "gemm.bf16_sustained_tflops", "gemm.fp8_burst_tflops", "gemm.fp8_sustained_tflops"]
    burst, sustained = found["gemm.bf16_burst_tflops"], found["gemm.bf16_sustained_tflops"]
    assert (burst.what, burst.detail, burst.value, burst.samples, burst.conditions) == (
        "the bf16 burst (from idle, before the power cap) matmul rate", " on square-8192", 779.01, (781.21, 761.75, 779.01), ())
    [limit] = sustained.conditions
    assert (limit.key, limit.value, limit.lower_than({"power_limit_w": 700}), limit.lower_than({"power_limit_w": 800})) == (
        "power_limit_w", 700.0, None, 800)
    fp8 = found["gemm.fp8_sustained_tflops"]
    assert (fp8.missing.status, fp8.missing.listed_first, fp8.missing.sentence) == (
        "skip", True, "fp8_e4m3 matmul is not offered here: fp8 needs compute capability 8.9, this GPU has 8.0")
    assert [(metric.metric_id, metric.value) for metric in judging_of("gemm").metrics({"devices": [gemm_entry()]})] == [
        ("gemm.bf16_burst_tflops", 779.01), ("gemm.bf16_sustained_tflops", 662.4)]


def test_gemm_a_result_without_the_states_is_a_skip_that_says_so():
    entry = gemm_entry()
    del entry["dtypes"]["bf16"]["power_states"]
    burst = next(found for found in gemm_measurements({"devices": [entry]}) if found.metric_id == "gemm.bf16_burst_tflops")
    assert burst.missing.status == "skip" and "older than the two named states" in burst.missing.sentence
