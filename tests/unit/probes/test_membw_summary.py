"""membw pure parts: plateau and repeats records, the headline, cache sizes, the snapshot thread."""
import threading
import time

import pytest

from probe_packages.membw.gpu_state import SnapshotDuring, where_in_window
from probe_packages.membw.plan import resolve_plan
from probe_packages.membw.summary import headline, plateau_record, repeats_record
from probelib.fields import is_unavailable
from probelib.measure.cache import cpu_last_level_cache, largest_level, parse_cache_size

from probelib.params import probe_defaults

PLAN = resolve_plan(dict(probe_defaults("membw")), "cuda")
QUICK_PLAN = resolve_plan(dict(probe_defaults("membw"), quick=True), "cuda")


def test_plateau_record_found():
    record = plateau_record([4, 16, 64, 256, 1024, 4096], [800.0, 5200.0, 3900.0, 4250.0, 4300.0, 4310.0], PLAN, 100.0)
    assert record["found"] is True
    assert record["plateau_gbps"] == 4300.0
    assert record["sizes_mib"] == [256, 1024, 4096]
    assert record["includes_largest_size"] is True
    assert record["min_size_mib"] == 100.0 and record["tolerance_pct"] == 3.0
    assert headline(False, record, 4096, 4310.0, 4305.0) == {
        "bandwidth_gbps": 4300.0, "source": "plateau", "sizes_mib": [256, 1024, 4096], "no_plateau": False}


def test_plateau_record_missing_says_why_and_headline_flags_it():
    record = plateau_record([256, 1024, 4096], [2000.0, 3000.0, 4000.0], PLAN, 100.0)
    assert record["found"] is False
    assert is_unavailable(record["plateau_gbps"]) and "still rises" in record["plateau_gbps"]["unavailable"]
    assert record["sizes_mib"] == []
    # the largest size's value (the repeats' median) with a flag, not a fake plateau
    assert headline(False, record, 4096, 4000.0, 4010.0) == {
        "bandwidth_gbps": 4010.0, "source": "largest_size_no_plateau", "sizes_mib": [4096], "no_plateau": True}
    assert headline(False, record, 4096, 4000.0, None)["bandwidth_gbps"] == 4000.0
    assert is_unavailable(headline(False, plateau_record([], [], PLAN, 0.0), None, None, None)["bandwidth_gbps"])


def test_quick_has_no_plateau_and_reports_the_repeats():
    record = plateau_record([4096], [4300.0], QUICK_PLAN, 100.0)
    assert record["found"] is False and "quick mode" in record["reason"]
    assert headline(True, record, 4096, 4300.0, 4290.0) == {
        "bandwidth_gbps": 4290.0, "source": "quick_largest_size", "sizes_mib": [4096], "no_plateau": False}


def test_repeats_record():
    record = repeats_record(4096, 50, [4000.0, 4400.0, 4200.0], [0.002, 0.0019, 0.00195], 5.0)
    assert record["median_gbps"] == 4200.0
    assert record["cv_pct"] == pytest.approx(200 / 4200 * 100, abs=1e-3)  # sd 200, mean 4200 -> 4.762 %
    assert record["cv_warn"] is False
    noisy = repeats_record(4096, 50, [4000.0, 4800.0, 4400.0], [0.002] * 3, 5.0)
    assert noisy["cv_pct"] == pytest.approx(400 / 4400 * 100, abs=1e-3)  # 9.091 %
    assert noisy["cv_warn"] is True
    single = repeats_record(4096, 50, [4000.0], [0.002], 5.0)
    assert is_unavailable(single["cv_pct"]) and single["cv_warn"] is False


def test_parse_cache_size_and_largest_level():
    assert parse_cache_size("32K") == 32768
    assert parse_cache_size("36864K\n") == 36864 * 1024
    assert parse_cache_size("2M") == 2 * 1024 * 1024
    assert parse_cache_size("512") == 512
    entries = [(1, "Data", 32768), (1, "Instruction", 32768), (2, "Unified", 1 << 20), (3, "Unified", 32 << 20)]
    assert largest_level(entries) == (3, 32 << 20)
    assert largest_level([(1, "Instruction", 1)]) is None


def test_cpu_cache_from_a_fake_sysfs(tmp_path):
    for index, (level, kind, size) in enumerate([(1, "Data", "48K"), (2, "Unified", "2048K"), (1, "Instruction", "32K")]):
        folder = tmp_path / ("index%d" % index)
        folder.mkdir()
        (folder / "level").write_text("%d\n" % level)
        (folder / "type").write_text(kind + "\n")
        (folder / "size").write_text(size + "\n")
    assert cpu_last_level_cache(str(tmp_path)) == {"bytes": 2048 * 1024, "source": "L2 cache of cpu0 from %s" % tmp_path}
    empty = cpu_last_level_cache(str(tmp_path / "nothing"))
    assert is_unavailable(empty["bytes"])


def test_where_in_window():
    assert where_in_window(5.0, 4.0, 6.0) == "during"
    assert where_in_window(3.9, 4.0, 6.0) == "before"
    assert where_in_window(6.1, 4.0, 6.0) == "after"


def test_snapshot_thread_lands_during_a_long_timing():
    seen = []
    watcher = SnapshotDuring(lambda: seen.append(threading.current_thread().name) or {"time_unix_s": time.time()},
                             0.05).start()
    start = time.time()
    time.sleep(0.2)
    state = watcher.finish(start, time.time())
    assert state["taken"] == "during" and seen == ["membw-gpu-snapshot"]
    assert state["delay_s"] == 0.05 and state["repeat_window_unix_s"][0] == round(start, 6)


def test_snapshot_thread_failure_is_a_field():
    def broken():
        raise RuntimeError("NVML went away")
    state = SnapshotDuring(broken, 0.0).start().finish(time.time() - 1, time.time() + 1)
    assert state["snapshot"] == {"unavailable": "the GPU snapshot failed: RuntimeError: NVML went away"}
