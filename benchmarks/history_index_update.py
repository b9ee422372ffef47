"""The run index's update (docs/history.md, "Cost"): the CPU time, wall time and peak memory of update_index reading
one judged run into a fresh index.

    benchmarks/history_index_update.py --make DIR --hosts 1000   # a synthetic run (8 GPUs a host), judged and reported
    benchmarks/history_index_update.py --update DIR              # update_index(DIR, rebuild=True), measured

--update prints one line: hosts, fleet.json MB, CPU s, wall s, this process's peak RSS (VmHWM) before and after the
update (the difference is what the update added to the report process). Linux only (/proc/self/status).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from synthetic_fleet import write_synthetic_run  # noqa: E402

import ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index as history_index  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run  # noqa: E402

RUN_ID = "20261201T000000Z-bench"


def vm_hwm_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def make(results: str, hosts: int) -> None:
    names = write_synthetic_run(results, RUN_ID, hosts, gpus=8, seed=1)
    path = os.path.join(results, RUN_ID)
    run = load_run(path, names, {})
    judgement = judge_run(run, results, {})
    render_run(path, names, {}, text_writer_below(results), judgement=judgement, loaded=run, workers=0)


def update(results: str) -> None:
    fleet_mb = sum(os.path.getsize(os.path.join(results, run_id, "fleet.json")) for run_id in history_index.judged_run_ids(results)) / 1e6
    before_mib = vm_hwm_mib()
    started, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    done = history_index.rebuild_index(results)
    now = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = now.ru_utime + now.ru_stime - cpu.ru_utime - cpu.ru_stime
    hosts = history_index.connect(results).execute("SELECT sum(host_count) FROM runs").fetchone()[0]
    print("hosts %s | fleet.json %.0f MB | CPU %.1f s | wall %.1f s | peak RSS before %.0f MiB, after %.0f MiB | problems %s"
          % (hosts, fleet_mb, cpu_s, time.monotonic() - started, before_mib, vm_hwm_mib(), done.problems))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--make", metavar="DIR")
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--update", metavar="DIR")
    args = parser.parse_args()
    if args.make:
        make(args.make, args.hosts)
    if args.update:
        update(args.update)
    return 0


if __name__ == "__main__":
    sys.exit(main())
