"""What the trend checks (issue 48 point 2) add to a report's judgement at fleet scale: judge_run of one synthetic run,
with the run index's trend history and without, alternated, over an index of earlier nights of the same hosts.

    benchmarks/trend_checks_cost.py --dir DIR --hosts 10000 --nights 30 --rounds 2
    benchmarks/trend_checks_cost.py --dir DIR --hosts 20 --nights 3 --rounds 1      # seconds

The earlier nights are benchmarks/history_scale.py's (fleet.json and outcomes written from a template run of real
judged synthetic hosts, indexed by update_index night after night) under this run's host names; the run judged is a
synthetic health run of the same hosts (benchmarks/synthetic_fleet.py, 8 GPUs), as in docs/scale.md. Each side judges
in a fresh process (the same code, the same files): "with" as the report action does (trend_history: the index brought
up to date, then each host's earlier runs read in the worker that judges it), "without" with no trend check. Prints
each process's judge time and CPU, then the medians and the difference; --render also times one whole report (render_run
after the judgement with trends) for the difference's share of it.

The synthetic hosts carry no headline metric (their results are health's), so slow decay reads each host's runs and
finds no series to fit; the fits' own cost is printed by --fit-cost, per host of an acceptance run (8 GPUs, 7 headlines:
56 series of 14 runs).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import history_scale  # noqa: E402
from fleet_reports import cpu_seconds  # noqa: E402
from synthetic_fleet import synthetic_host_name, write_synthetic_run  # noqa: E402

from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import update_index  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.report_update import trend_history  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run  # noqa: E402

RUN_ID = "20270101T020000Z-judged"


def build(work: str, hosts: int, gpus: int, nights: int) -> str:
    """The results directory: the earlier nights, indexed, and the run to judge, stored unjudged."""
    results = os.path.join(work, "results")
    if os.path.exists(results):
        shutil.rmtree(results)
    os.makedirs(results)
    members, templates, unused_full = history_scale.make_templates(work, hosts, gpus, True)
    for number in range(nights):
        history_scale.write_night(results, number, hosts, members, templates, synthetic_host_name)
        update_index(results)
        print("night %d/%d indexed" % (number + 1, nights), flush=True)
    write_synthetic_run(results, RUN_ID, hosts, gpus)
    return results


def judge_once(results: str, hosts: int, trends: bool, render: bool) -> dict:
    names = [synthetic_host_name(number) for number in range(hosts)]
    run = load_run(os.path.join(results, RUN_ID), names, {})
    started, cpu = time.perf_counter(), cpu_seconds()
    judgement = judge_run(run, results, {}, trend_history=trend_history(results, RUN_ID, {}) if trends else None)
    judged, judged_cpu = time.perf_counter(), cpu_seconds()
    fired = sum(1 for verdict in judgement.hosts.values() for check in verdict.checks
                if check.id.startswith("history.") and check.status not in ("pass", "skip"))
    made = sum(1 for verdict in judgement.hosts.values() for check in verdict.checks if check.id.startswith("history."))
    row = {"trends": trends, "judge_s": judged - started, "judge_cpu_s": judged_cpu - cpu, "trend_checks": made, "fired": fired}
    if render:
        render_run(os.path.join(results, RUN_ID), names, {}, text_writer_below(results), judgement=judgement, loaded=run)
        row["report_s"] = time.perf_counter() - started
    return row


def fit_cost(rounds: int = 200) -> float:
    """Milliseconds of slow decay for one acceptance host: 8 GPUs x 7 headlines, 14 nightly runs each."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.history_model import EarlierRun, HostHistory
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.metrics import Metric
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.trends import headline_specs, slow_decay
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import probe_catalogue
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import shipped_rules
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import effective_rules
    specs = headline_specs(probe_catalogue().metric_specs)
    rule = effective_rules([found for found in shipped_rules()["rules"] if found["id"] == "history.slow_decay"])[0][0]
    runs = [EarlierRun("r%02d" % day, "2026-12-%02dT02:00:00Z" % (day + 1), "pass") for day in range(13)]
    series, metrics = {}, []
    for metric_id, spec in specs.items():
        for index in range(8):
            uuid = "GPU-%04d" % index
            series[(metric_id, uuid)] = [(run.started, 1000.0 + day, run.run_id) for day, run in enumerate(runs)][::-1]
            metrics.append(Metric(metric_id, uuid, index, 1013.0, spec.unit, spec.better))
    history = HostHistory(runs=runs[::-1], series=series)
    started = time.perf_counter()
    for unused in range(rounds):
        slow_decay("h", rule, metrics, specs, history, "2026-12-15T02:00:00Z", {})
    return (time.perf_counter() - started) / rounds * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--nights", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--render", action="store_true", help="also time one whole report with the trend checks")
    parser.add_argument("--fit-cost", action="store_true", help="only print slow decay's cost for one acceptance host")
    parser.add_argument("--one", choices=("with", "without", "render"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.fit_cost:
        print("slow decay of one acceptance host (56 series of 14 runs): %.2f ms" % fit_cost())
        return 0
    results = os.path.join(args.dir, "results")
    if args.one:
        print(json.dumps(judge_once(results, args.hosts, args.one != "without", args.one == "render")))
        return 0
    build(args.dir, args.hosts, args.gpus, args.nights)
    rows = []
    print("\n| round | trend checks | judge s | judge CPU-s | trend checks made | fired |\n| ---: | --- | ---: | ---: | ---: | ---: |")
    for number in range(1, args.rounds + 1):
        for side in ("without", "with"):
            output = subprocess.run([sys.executable, os.path.abspath(__file__), "--dir", args.dir, "--hosts", str(args.hosts),
                                     "--one", side], check=True, stdout=subprocess.PIPE, text=True).stdout
            row = json.loads(output.splitlines()[-1])
            rows.append(row)
            print("| %d | %s | %.1f | %.1f | %d | %d |" % (number, side, row["judge_s"], row["judge_cpu_s"], row["trend_checks"], row["fired"]),
                  flush=True)
    without = statistics.median(row["judge_s"] for row in rows if not row["trends"])
    with_trends = statistics.median(row["judge_s"] for row in rows if row["trends"])
    print("\nmedian judge: %.1f s without, %.1f s with the trend checks: %+.1f s (%d hosts, %d earlier nights)"
          % (without, with_trends, with_trends - without, args.hosts, args.nights))
    if args.render:
        output = subprocess.run([sys.executable, os.path.abspath(__file__), "--dir", args.dir, "--hosts", str(args.hosts), "--one", "render"],
                                check=True, stdout=subprocess.PIPE, text=True).stdout
        report = json.loads(output.splitlines()[-1])["report_s"]
        print("one whole report with the trend checks (judge and render_run): %.1f s; the trend checks' share: %.1f %%"
              % (report, (with_trends - without) / report * 100.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
