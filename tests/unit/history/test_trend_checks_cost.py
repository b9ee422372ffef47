"""benchmarks/trend_checks_cost.py (issue 48, point 5) at a tiny scale: the judged run's hosts are the earlier nights'
(so the trend checks read real history), "with" makes the four trend checks on every host and "without" none."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import trend_checks_cost  # noqa: E402  pylint: disable=import-error,wrong-import-position


def test_both_sides_judge_the_same_hosts_and_only_one_makes_trend_checks(tmp_path):
    results = trend_checks_cost.build(str(tmp_path), 6, 4, 3)
    with_trends = trend_checks_cost.judge_once(results, 6, True, False)
    without = trend_checks_cost.judge_once(results, 6, False, False)
    assert (with_trends["trend_checks"], without["trend_checks"]) == (6 * 4, 0)
    # every host has its three earlier nights: flapping counts them (skips for want of 10), none says it has none
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.trend_reader import IndexHistory
    history = IndexHistory(results, trend_checks_cost.RUN_ID, [name for name in os.listdir(results) if name.endswith("-nightly")],
                           60, []).of(trend_checks_cost.synthetic_host_name(5))
    assert len(history.runs) == 3 and not history.problem


def test_the_fit_cost_is_measured():
    completed = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "trend_checks_cost.py"), "--dir", "unused",
                                "--fit-cost"], capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("slow decay of one acceptance host (56 series of 14 runs): ")
