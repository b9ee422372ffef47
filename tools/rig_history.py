"""Put every run the rig recorded (docs/examples) into one results directory and report them oldest first, as nightly
reports would have: the run index and the fleet history page (docs/history.md) over the rig's real runs.

    python tools/rig_history.py OUT [--collection DIR]

Each run directory under docs/examples (a run id a playbook named) is copied to OUT/results once (a run id found in
two folders is taken from the first), then playbooks/report.yml of the collection at DIR (default: this one) judges and
renders each run in run-id order, each report updating the index and writing OUT/results/history.html. Prints one line
per run (its report's exit code) and, at the end, the index's runs by verdict and every trend check that fired.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rerender_examples import EXAMPLES, run_folders  # noqa: E402  pylint: disable=wrong-import-position

INDEX = ".gpufleet-history.sqlite3"


def recorded_runs():
    """{run id: its directory}, the first folder's where a run id is stored twice."""
    found = {}
    for relative, runs in run_folders(EXAMPLES):
        for run_id in runs:
            found.setdefault(run_id, os.path.join(EXAMPLES, relative, run_id))
    return found


def summary(results: str) -> str:
    connection = sqlite3.connect("file:%s?mode=ro" % os.path.join(results, INDEX), uri=True)
    try:
        lines = ["runs in the index: %d" % connection.execute("SELECT count(*) FROM runs").fetchone()[0]]
        lines += ["  %s: %d host-runs" % row for row in connection.execute(
            "SELECT verdict, count(*) FROM hosts GROUP BY verdict ORDER BY count(*) DESC")]
        lines.append("trend checks that fired:")
        lines += ["  %s %s %s %s: %s" % row for row in connection.execute(
            "SELECT c.run_id, c.host, c.check_id, c.status, c.reason FROM causes c WHERE c.check_id LIKE 'history.%' "
            "ORDER BY c.run_id")]
    finally:
        connection.close()
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--collection", default=ROOT, help="the collection whose report renders (default: this one)")
    args = parser.parse_args()
    results = os.path.abspath(os.path.join(args.out, "results"))
    os.makedirs(results, exist_ok=True)
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    failures = 0
    for run_id, source in sorted(recorded_runs().items()):
        target = os.path.join(results, run_id)
        if not os.path.isdir(target):
            shutil.copytree(source, target, symlinks=True)
        argv = [playbook, "playbooks/report.yml", "-i", "localhost,", "-e", "gpufleet_run_id=%s" % run_id,
                "-e", "gpufleet_results_dir=%s" % results]
        completed = subprocess.run(argv, cwd=args.collection, capture_output=True, text=True, timeout=600, check=False)
        print("%s (%s): rc %d" % (run_id, os.path.relpath(source, EXAMPLES), completed.returncode), flush=True)
        if completed.returncode not in (0, 2):
            failures += 1
            print(completed.stdout[-2000:] + completed.stderr[-2000:])
    print(summary(results))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
