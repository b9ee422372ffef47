"""A sweeping probe's device entry is finished by one function (probelib/device_outcome.py close_sweep, membw and
fusion): nothing measured is an error naming each point, a measured sweep with problems partial."""
from probelib.device_outcome import close_sweep


def words(point):
    return "%d MiB" % point["size_mib"]


def test_a_sweep_with_no_measured_point_is_an_error_naming_each_point():
    points = [{"size_mib": 1, "status": "skipped", "reason": "does not fit"}, {"size_mib": 4, "status": "failed", "reason": "OOM"}]
    entry = close_sweep({"status": "ok"}, points, words, ["a problem"])
    assert entry == {"status": "error", "problems": ["a problem"],
                     "error": {"type": "NothingMeasured",
                               "message": "no size was measured: 1 MiB skipped (does not fit); 4 MiB failed (OOM)"}}


def test_a_measured_sweep_is_partial_with_problems_and_unchanged_without():
    points = [{"size_mib": 1, "status": "measured", "reason": ""}]
    problems = ["copy check failed once"]
    entry = close_sweep({"status": "ok"}, points, words, problems)
    assert entry == {"status": "partial", "problems": problems} and entry["problems"] is not problems
    assert close_sweep({"status": "ok"}, points, words, []) == {"status": "ok", "problems": []}
