"""memtest's findings held against its rules on a 2-GPU H200 host (the recorded health result's GPUs): pattern errors
fail naming the GPU, worker, pattern and byte range; an uncorrectable ECC rise or a new pending remap fails, a corrected
rise warns; a GPU tested below half of its free memory warns; the CPU path is skipped where a GPU quantity is judged."""
import copy

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.memtest.view import memtest_view
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import probe_metrics
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

from helpers import GPU0, GPU1, RIG_OVERRIDES, baselines, checks_of, health_ok, judge_fleet, one, rules

GB = 10 ** 9
FREE = 143 * GB
TESTED = 125 * GB
PATTERNS = ("walking_ones", "walking_zeros", "address", "random")
COUNTERS = ("ecc.volatile_corrected_count", "ecc.volatile_uncorrected_count", "ecc.aggregate_corrected_count",
            "ecc.aggregate_uncorrected_count", "remapped_rows.correctable_count", "remapped_rows.uncorrectable_count",
            "remapped_rows.pending", "remapped_rows.failure")
ECC = {"mode_current": "enabled", "mode_pending": "enabled", "volatile_corrected_count": 0, "volatile_uncorrected_count": 0,
       "aggregate_corrected_count": 0, "aggregate_uncorrected_count": 0}
ROWS = {"correctable_count": 0, "uncorrectable_count": 0, "pending": False, "failure": False}


def worker_result(buffer_bytes=TESTED, passes=40, errors=0, ranges=()):
    patterns = [{"pattern": name, "passes": passes, "bytes_written": buffer_bytes * passes, "bytes_checked": buffer_bytes * passes,
                 "errors": errors if name == "random" else 0, "seconds": 7.4, "gbps": 2.0 * buffer_bytes * passes / 7.4 / 1e9}
                for name in PATTERNS]
    return {"budget_s": 30.0, "test_s": 29.6, "rounds": passes, "stopped": "the next walking_ones pass would end past the budget",
            "patterns": patterns, "bytes_written": 4 * passes * buffer_bytes, "bytes_checked": 4 * passes * buffer_bytes,
            "errors": errors, "gbps": 8.0 * passes * buffer_bytes / 29.6 / 1e9, "error_ranges": list(ranges),
            "error_ranges_left_out": 0, "injected": None, "buffer_bytes": buffer_bytes, "buffer_address": "0x7f0000000000",
            "chunk_bytes": 256 << 20, "chunks": buffer_bytes // (256 << 20) + 1, "free_memory_bytes": FREE,
            "free_memory_source": "NVML nvmlDeviceGetMemoryInfo free, read by the probe before any worker started",
            "share_bytes": FREE, "tested_pct_of_share": 100.0 * buffer_bytes / FREE, "sizing_note": ""}


def error_range(start=3 << 30):
    return {"pattern": "random", "pass": 17, "errors": 2, "chunk_bytes": [3 << 30, (3 << 30) + (256 << 20)],
            "error_bytes": [start + 4096, start + 8200], "first_expected": "0x0123456789abcdef",
            "first_found": "0x0123456789abcdee", "first_differing_bits": "0x0000000000000001"}


def device(index, uuid, tested=TESTED, rose=(), compared=COUNTERS, unread=None):
    return {"device": {"kind": "cuda", "index": index, "name": "NVIDIA H200", "uuid": uuid, "memory_total_mib": 143771,
                       "compute_capability": "9.0"},
            "status": "ok", "error": None, "problems": [], "workers": [index], "free_memory_bytes": FREE,
            "tested_bytes": tested, "tested_pct_of_free": 100.0 * tested / FREE, "errors": 0,
            "counters_before": {"ecc": dict(ECC), "remapped_rows": dict(ROWS)},
            "counters_after": {"ecc": dict(ECC), "remapped_rows": dict(ROWS)},
            "counter_changes": {"rose": list(rose), "compared": list(compared), "unread": dict(unread or {})}}


def record(index, result=None, error=None):
    entry = {"worker": index, "kind": "cuda", "device_index": index, "slot": 0, "workers_on_device": 1,
             "status": "ok" if error is None else "error", "start_lag_ms": 0.4, "duration_s": 41.0}
    if error is None:
        entry["result"] = result or worker_result()
    else:
        entry["error"] = error
    return entry


def memtest(devices=None, workers=None):
    data = {"method": {key: "words" for key in ("patterns", "word", "check", "budget", "sizing", "rate", "counters")},
            "plan": {"kind": "cuda", "device_request": "auto", "patterns": list(PATTERNS), "budget_s": 30.0, "word_bytes": 8,
                     "chunk_bytes": 256 << 20, "memory_pct": 90.0, "safety_margin_mib": 2048.0, "cpu_mib": 64, "seed": 35,
                     "workers_per_gpu": 1, "max_error_ranges": 32, "inject": None},
            "devices": devices if devices is not None else [device(0, GPU0), device(1, GPU1)],
            "together": {"method": "words", "task": "probe_packages.memtest.worker:run_worker", "mode": "processes",
                         "workers": workers if workers is not None else [record(0), record(1)], "released_together": True,
                         "start_spread_ms": 0.6, "wall_s": 44.0},
            "errors": []}
    schema_validator("memtest.schema.json").validate(data)
    envelope = copy.deepcopy(health_ok())
    envelope.update(probe="memtest", status="ok", reason="", data=data)
    return envelope


def verdict(envelope):
    hosts = {"rig": {"envelopes": {"health": health_ok(), "memtest": envelope}, "reached": True, "reason": "", "groups": [],
                     "rule_overrides": RIG_OVERRIDES}}
    return judge_fleet("run", hosts, baselines(), rules()).hosts["rig"]


def test_a_healthy_two_gpu_host_passes_every_memtest_check():
    judged = verdict(memtest())
    for check_id in ("memtest.errors", "memtest.ecc_increase", "memtest.coverage"):
        assert [check.status for check in checks_of(judged, check_id)] == ["pass", "pass"], check_id
    errors = one(judged, "memtest.errors", 1)
    assert errors.gpu_uuid == GPU1 and errors.reason.startswith("GPU 1 (%s) worker 1: 0 wrong word(s), 125 GB tested" % GPU1[:12])
    assert "walking_ones 40" in errors.reason
    assert one(judged, "memtest.ecc_increase", 0).reason.endswith("no memory error counter rose while its memory was tested (8 compared)")
    assert one(judged, "memtest.coverage", 0).value == 100.0 * TESTED / FREE


def test_one_wrong_word_fails_naming_the_gpu_worker_pattern_and_byte_range():
    bad = worker_result(errors=2, ranges=[error_range()])
    judged = verdict(memtest(workers=[record(0), record(1, bad)]))
    assert one(judged, "memtest.errors", 0).status == "pass"
    failed = one(judged, "memtest.errors", 1)
    assert failed.status == "fail" and failed.value == 2 and failed.threshold == "<= 0 wrong words"
    assert failed.reason.startswith("GPU 1 (%s) worker 1: 2 wrong word(s)" % GPU1[:12])
    assert ("wrong words by pattern: random 2; at random pass 17: bytes %d-%d (chunk %d-%d), 2 wrong word(s), first expected "
            "0x0123456789abcdef found 0x0123456789abcdee (bits 0x0000000000000001)" % (
                (3 << 30) + 4096, (3 << 30) + 8200, 3 << 30, (3 << 30) + (256 << 20))) in failed.reason
    assert judged.verdict == "fail"


def test_an_injected_flip_is_said_to_be_one():
    bad = worker_result(errors=1, ranges=[error_range()])
    bad["injected"] = {"pattern": "random", "pass": 0, "offset_bytes": 4099, "bit": 0, "word_offset_bytes": 4096}
    failed = one(verdict(memtest(workers=[record(0, bad), record(1)])), "memtest.errors", 0)
    assert failed.status == "fail" and "a test bit flip was injected here (inject_offset_bytes 4099, bit 0, random pass 0)" in failed.reason


def test_a_worker_that_failed_is_an_error_not_a_pass():
    judged = verdict(memtest(workers=[record(0), record(1, error="RuntimeError: CUDA error: out of memory")]))
    check = one(judged, "memtest.errors", 1)
    assert check.status == "error" and check.reason == ("GPU 1 (%s) worker 1 tested nothing: RuntimeError: CUDA error: out of "
                                                        "memory" % GPU1[:12])


def test_an_uncorrectable_rise_or_a_new_pending_remap_fails_and_a_corrected_rise_warns():
    uncorrectable = [{"counter": "ecc.volatile_uncorrected_count", "before": 0, "after": 1, "increase": 1}]
    pending = [{"counter": "remapped_rows.pending", "before": False, "after": True, "increase": 1}]
    corrected = [{"counter": "ecc.aggregate_corrected_count", "before": 3, "after": 5, "increase": 2}]
    judged = verdict(memtest(devices=[device(0, GPU0, rose=uncorrectable + corrected), device(1, GPU1, rose=pending)]))
    first, second = one(judged, "memtest.ecc_increase", 0), one(judged, "memtest.ecc_increase", 1)
    assert first.status == "fail" and first.reason == (
        "GPU 0 (%s): rose while its memory was tested: ecc.volatile_uncorrected_count 0 -> 1, ecc.aggregate_corrected_count "
        "3 -> 5" % GPU0[:12])
    assert second.status == "fail" and "remapped_rows.pending False -> True" in second.reason
    warned = one(verdict(memtest(devices=[device(0, GPU0, rose=corrected), device(1, GPU1)])), "memtest.ecc_increase", 0)
    assert warned.status == "warn" and warned.value == 2
    assert warned.reason.endswith("corrected errors rose while its memory was tested: ecc.aggregate_corrected_count 3 -> 5")


def test_counters_the_gpu_does_not_offer_are_a_skip_and_those_it_offers_are_judged():
    unsupported = {name: "not supported by this GPU (NVML: Not Supported)" for name in COUNTERS}
    judged = verdict(memtest(devices=[device(0, GPU0, compared=[], unread=unsupported),
                                      device(1, GPU1, compared=COUNTERS[:2], unread={name: unsupported[name] for name in COUNTERS[2:]})]))
    skipped = one(judged, "memtest.ecc_increase", 0)
    assert skipped.status == "skip" and "no memory error counter could be compared" in skipped.reason
    partly = one(judged, "memtest.ecc_increase", 1)
    assert partly.status == "pass" and "(2 compared); not read: ecc.aggregate_corrected_count" in partly.reason
    no_nvml = {name: "nvidia-ml-py is not installed for /usr/bin/python3" for name in COUNTERS}
    unread = one(verdict(memtest(devices=[device(0, GPU0, compared=[], unread=no_nvml), device(1, GPU1)])), "memtest.ecc_increase", 0)
    assert unread.status == "error"


def test_a_gpu_tested_below_half_of_its_free_memory_warns():
    judged = verdict(memtest(devices=[device(0, GPU0, tested=60 * GB), device(1, GPU1)]))
    low = one(judged, "memtest.coverage", 0)
    assert low.status == "warn" and low.reference == 50 and low.value < 50
    assert low.reason.startswith("GPU 0 (%s): 42 %% of 143 GB free tested by 1 worker(s); below 50 %%" % GPU0[:12])
    assert one(judged, "memtest.coverage", 1).status == "pass"


def test_the_cpu_path_is_judged_for_errors_and_skipped_for_gpu_counters_and_coverage():
    cpu = device(0, GPU0)
    cpu["device"] = {"kind": "cpu", "index": 0, "name": "AMD EPYC", "uuid": {"unavailable": "a CPU has no UUID"},
                     "memory_total_mib": 24105, "compute_capability": {"unavailable": "not a GPU"}}
    cpu_record = dict(record(0), kind="cpu")
    judged = verdict(memtest(devices=[cpu], workers=[cpu_record]))
    assert one(judged, "memtest.errors").status == "pass" and one(judged, "memtest.errors").reason.startswith("CPU worker 0: ")
    assert one(judged, "memtest.ecc_increase").status == "skip"
    assert one(judged, "memtest.coverage").status == "skip"
    assert probe_metrics("memtest", memtest(devices=[cpu], workers=[cpu_record])["data"]) == []


def test_each_gpus_pattern_rate_is_a_metric():
    metrics = probe_metrics("memtest", memtest()["data"])
    assert [(metric.metric_id, metric.gpu_uuid, metric.unit) for metric in metrics] == [
        ("memtest.pattern_rate_gbps", GPU0, "GB/s"), ("memtest.pattern_rate_gbps", GPU1, "GB/s")]
    assert metrics[0].value == worker_result()["gbps"]


def test_the_view_shows_the_workers_the_error_ranges_and_the_counters():
    bad = worker_result(errors=2, ranges=[error_range()])
    rose = [{"counter": "ecc.volatile_uncorrected_count", "before": 0, "after": 1, "increase": 1}]
    view = memtest_view(memtest(devices=[device(0, GPU0, rose=rose), device(1, GPU1)], workers=[record(0, bad), record(1)])["data"])
    workers, ranges, counters = view["tables"]
    assert [row[0].text for row in workers["rows"]] == ["GPU 0 (%s) worker 0" % GPU0[:12], "GPU 1 (%s) worker 1" % GPU1[:12]]
    assert workers["rows"][0][4].flag == "bad" and workers["rows"][1][4].flag == ""
    (row,) = ranges["rows"]
    assert row[1].text == "random pass 17" and row[4].text == "0x0123456789abcdef" and row[5].text == "0x0123456789abcdee"
    assert [cell.text for cell in counters["rows"][0]] == ["GPU 0 (%s)" % GPU0[:12], "ecc.volatile_uncorrected_count", "0", "1"]
    assert counters["rows"][1][3].text == "unchanged"
