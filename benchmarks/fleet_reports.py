"""Benchmark: judge and render the fleet reports for synthetic fleets (default 1, 100 and 1,000 hosts of 8 GPUs).

    .venv/bin/python benchmarks/fleet_reports.py [--hosts 1 100 1000] [--gpus 8]
    .venv/bin/python benchmarks/fleet_reports.py --whole-run [--hosts 1000 10000] [--workers 1 0] [--previous]
    .venv/bin/python benchmarks/fleet_reports.py --acceptance-host [--gpus 8]
    .venv/bin/python benchmarks/fleet_reports.py --whole-run --against REV [--rounds 2] [--hosts 1000] [--workers 0] [--previous]

--against REV times the whole run of this checkout and of the collection at an earlier commit REV (checked out with
`git worktree` into a temporary folder) in the same sitting, in turn: REV, this, REV, this ... (--rounds pairs). Both
sides run this script and its synthetic fleet in a process of their own; only the collection imported differs. It
prints every run, then each side's median per step and the ratio this / REV: on a shared machine the ratio, not the
absolute time, is what a comparison can trust, and the CPU seconds (of the process and its dossier workers, the
sampler of memory not counted) vary less with the load beside it than the wall times do.

--acceptance-host renders one synthetic host of --gpus H200s that ran every probe of the acceptance profile
(benchmarks/synthetic_acceptance_host.py) as the report action does, and prints the size of each page it writes (the
dossier in KiB per GPU: issue 31 bounds it at 300) and the CPU time of rendering them (best of 3).

--whole-run does what the report action does for every host (render_run: every dossier, then the fleet outputs),
with --workers processes for the dossiers (0: one per usable core, the action's default), and prints the time split
by step (load, judge, dossiers, fleet outputs) and the peak memory: this process's own peak RSS and the largest peak
of a dossier worker (forked: their RSS counts the pages they share with this process again). Targets (issue 18):
1,000 hosts x 8 GPUs <= 30 s on 2 cores, dossiers included; 10,000 hosts <= 5 min with peak memory <= 2 GiB.

Prints a table: the wall time of each step of what the report action does (load the stored results,
judge, render the fleet outputs: index.html, index.md, fleet.json, junit.xml, gpufleet.prom), the time of
one host's dossier (rendered for the first --dossiers hosts; the report action renders one per host, so a
whole run costs hosts x that), and the process's peak memory. The results are written into a temporary
directory that is removed afterwards. Target: the fleet reports of 1,000 hosts under 10 s on the 2-core CI machine.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import statistics
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The collection the benchmark imports: this checkout's, or another's when --against runs this script for REV.
COLLECTIONS_VARIABLE = "GPUFLEET_BENCH_COLLECTIONS"
sys.path.insert(0, os.environ.get(COLLECTIONS_VARIABLE) or os.path.join(ROOT, "collections"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below, write_text_atomically  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run  # noqa: E402
try:
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report import render as report_render  # noqa: E402
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.parallel import usable_cores  # noqa: E402
except ImportError:  # --against an earlier revision, from before the report had a package of its own
    from ansible_collections.gpufleet.validation.plugins.plugin_utils import report_render  # noqa: E402
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report_parallel import usable_cores  # noqa: E402
try:
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.host_pages import (  # noqa: E402
        render_host_dossier_html, render_host_dossier_markdown)
except ImportError:  # before the page contexts left the run writer
    render_host_dossier_html, render_host_dossier_markdown = report_render.render_host_dossier_html, report_render.render_host_dossier_markdown
render_fleet_outputs, render_run = report_render.render_fleet_outputs, report_render.render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run  # noqa: E402
from synthetic_fleet import rack_of, write_synthetic_run  # noqa: E402
from synthetic_acceptance_host import write_acceptance_host  # noqa: E402

RUN_ID = "20261130T000000Z-000001"
PREVIOUS_RUN_ID = "20261129T000000Z-000001"


def measure(hosts: int, gpus: int, max_dossiers: int) -> dict:
    results = tempfile.mkdtemp(prefix="gpufleet-bench-")
    try:
        names = write_synthetic_run(results, RUN_ID, hosts, gpus)
        groups = {name: [rack_of(name)] for name in names}
        run_path = os.path.join(results, RUN_ID)
        started = time.perf_counter()
        run = load_run(run_path, names, groups)
        loaded = time.perf_counter()
        judgement = judge_run(run, results, {})
        judged = time.perf_counter()
        render_fleet_outputs(run, write_text_atomically, judgement)
        fleet_rendered = time.perf_counter()
        dossier_hosts = run.hosts[:max_dossiers]
        for host in dossier_hosts:
            host_path = os.path.join(run_path, host.dir_name)
            write_text_atomically(os.path.join(host_path, "dossier.html"), render_host_dossier_html(host, run, judgement))
            write_text_atomically(os.path.join(host_path, "dossier.md"), render_host_dossier_markdown(host, run, judgement))
        dossiers_rendered = time.perf_counter()
        fleet_size = sum(os.path.getsize(os.path.join(run_path, name))
                         for name in ("index.html", "index.md", "fleet.json", "junit.xml", "gpufleet.prom"))
        verdicts = {}
        for verdict in judgement.hosts.values():
            verdicts[verdict.verdict] = verdicts.get(verdict.verdict, 0) + 1
        per_dossier = (dossiers_rendered - fleet_rendered) / max(1, len(dossier_hosts))
        return {"hosts": hosts, "gpus": hosts * gpus, "load_s": loaded - started, "judge_s": judged - loaded,
                "fleet_s": fleet_rendered - judged, "fleet_total_s": fleet_rendered - started,
                "dossier_s": per_dossier, "dossiers_measured": len(dossier_hosts),
                "checks": sum(len(verdict.checks) for verdict in judgement.hosts.values()),
                "fleet_mib": fleet_size / 2 ** 20, "verdicts": verdicts}
    finally:
        shutil.rmtree(results, ignore_errors=True)


# Samples the memory of a process and its descendants every 0.2 s until its standard input closes, then prints the
# largest sum of their PSS (shared pages divided among the processes that share them: forked workers are not counted
# twice) in KiB. A separate process, not a thread: the report forks its dossier workers only where no thread runs.
_PSS_SAMPLER = r"""
import os, sys, threading
root, peak, done = int(sys.argv[1]), [0], threading.Event()
def tree():
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
                todo.extend(int(child) for child in handle.read().split())
        except OSError:
            pass
    return found
def pss(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as handle:
            return sum(int(line.split()[1]) for line in handle if line.startswith("Pss:"))
    except (OSError, ValueError):
        return 0
def sample():
    while not done.wait(0.2):
        peak[0] = max(peak[0], sum(pss(pid) for pid in tree()))
thread = threading.Thread(target=sample)
thread.start()
sys.stdin.read()
done.set()
thread.join()
print(peak[0])
"""


class TreeMemory:
    """The peak PSS of this process and its children while the block runs (a sampler process; Linux only)."""

    def __enter__(self) -> "TreeMemory":
        self.peak_mib = float("nan")
        self._sampler = subprocess.Popen([sys.executable, "-c", _PSS_SAMPLER, str(os.getpid())],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        return self

    def __exit__(self, *exc) -> None:
        out = self._sampler.communicate("")[0]
        self.peak_mib = int(out.strip() or 0) / 1024


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its children that have ended (the dossier workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure_whole_run(hosts: int, gpus: int, workers: int, previous: bool = False, history: bool = False) -> dict:
    """render_run as the report action calls it, timed by step, with the peak PSS of this process and its workers.

    previous: the same fleet was also run the night before (PREVIOUS_RUN_ID, other random draws), so every host is
    judged for drift against it, as in a nightly run. history: then the run index is updated, as the report action
    does after render_run (history/report_update.py; the previous run, stored unjudged, has no fleet.json to index)."""
    results = tempfile.mkdtemp(prefix="gpufleet-bench-")
    try:
        if previous:
            write_synthetic_run(results, PREVIOUS_RUN_ID, hosts, gpus, seed=2)
        names = write_synthetic_run(results, RUN_ID, hosts, gpus)
        groups = {name: [rack_of(name)] for name in names}
        run_path = os.path.join(results, RUN_ID)
        marks = {}
        render_fleet_outputs_itself = report_render.render_fleet_outputs

        def render_fleet_outputs_timed(*args, **kwargs):
            # render_run's last step; the fleet outputs may be written by forked workers, so it is timed here
            marks["fleet_started"] = time.perf_counter()
            return render_fleet_outputs_itself(*args, **kwargs)

        with TreeMemory() as memory:
            cpu_started = cpu_seconds()
            started = time.perf_counter()
            run = load_run(run_path, names, groups)
            loaded = time.perf_counter()
            judgement = judge_run(run, results, {})
            judged = time.perf_counter()
            report_render.render_fleet_outputs = render_fleet_outputs_timed
            try:
                render_run(run_path, names, groups, text_writer_below(results), judgement=judgement, loaded=run,
                           workers=workers or None)
            finally:
                report_render.render_fleet_outputs = render_fleet_outputs_itself
            rendered = ended = time.perf_counter()
            if history:
                from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.report_update import index_warnings
                warnings = index_warnings(results, RUN_ID)
                if warnings:
                    raise SystemExit("the run index was not updated: %s" % warnings)
                ended = time.perf_counter()
            cpu_used = cpu_seconds() - cpu_started
        dossiers = sum(os.path.exists(os.path.join(run_path, host.dir_name, "dossier.html")) for host in run.hosts)
        return {"hosts": hosts, "gpus": hosts * gpus, "workers": workers or usable_cores(), "load_s": loaded - started,
                "judge_s": judged - loaded, "dossiers_s": marks["fleet_started"] - judged,
                "fleet_s": rendered - marks["fleet_started"], "history_s": ended - rendered, "total_s": ended - started, "cpu_s": cpu_used,
                "dossiers": dossiers, "peak_pss_mib": memory.peak_mib}
    finally:
        shutil.rmtree(results, ignore_errors=True)


def main_acceptance_host(gpus: int) -> int:
    results = tempfile.mkdtemp(prefix="gpufleet-bench-")
    try:
        host = "gpu-r00-n000"
        host_path = write_acceptance_host(results, RUN_ID, host, gpus)
        run_path = os.path.join(results, RUN_ID)
        run = load_run(run_path, [host], {})
        judgement = judge_run(run, results, {})
        seconds = []
        for unused_round in range(3):
            started = time.process_time()
            render_run(run_path, [host], {}, write_text_atomically, judgement=judgement, loaded=run, workers=1)
            seconds.append(time.process_time() - started)
        print("| file | KiB | KiB per GPU |")
        print("| --- | ---: | ---: |")
        for name in sorted(os.listdir(host_path)):
            size = os.path.getsize(os.path.join(host_path, name)) / 1024
            print("| %s | %.0f | %.0f |" % (name, size, size / gpus))
        print("\n%d GPUs, %d probes, %d checks, verdict %s; the report of this host (every page): %.2f CPU-s (best of 3)" % (
            gpus, len(run.hosts[0].probes), len(judgement.hosts[host].checks), judgement.hosts[host].verdict, min(seconds)))
    finally:
        shutil.rmtree(results, ignore_errors=True)
    return 0


def main_whole_run(args) -> int:
    print("| hosts | GPUs | previous run | dossier processes | load s | judge s | dossiers s | fleet outputs s | total s | dossiers written "
          "| peak PSS MiB (this process and its workers) | peak RSS MiB (this process) | peak RSS MiB (largest worker) |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for hosts in args.hosts:
        for workers in args.workers:
            row = measure_whole_run(hosts, args.gpus, workers, args.previous, args.history)
            print("| %d | %d | %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %d | %.0f | %.0f | %.0f |" % (
                row["hosts"], row["gpus"], "yes" if args.previous else "no", row["workers"], row["load_s"], row["judge_s"], row["dossiers_s"], row["fleet_s"],
                row["total_s"], row["dossiers"], row["peak_pss_mib"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))
            if args.history:
                print("(total s and peak PSS include the run index's update: %.1f s, CPU %.1f s in all)" % (row["history_s"], row["cpu_s"]))
            sys.stdout.flush()
    return 0


STEPS = (("load_s", "load s"), ("judge_s", "judge s"), ("dossiers_s", "dossiers s"), ("fleet_s", "fleet outputs s"),
         ("total_s", "total s"), ("cpu_s", "CPU s"), ("peak_pss_mib", "peak PSS MiB"))


def whole_run_in_process(collections: str, hosts: int, gpus: int, workers: int, previous: bool) -> dict:
    """measure_whole_run in a fresh process that imports the collection in collections."""
    command = [sys.executable, os.path.abspath(__file__), "--whole-run", "--json", "--hosts", str(hosts), "--gpus", str(gpus),
               "--workers", str(workers)] + (["--previous"] if previous else [])
    # A session of its own, so that an interrupted comparison ends the run and its dossier workers together.
    child = subprocess.Popen(command, env=dict(os.environ, **{COLLECTIONS_VARIABLE: collections}), stdout=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        output = child.communicate()[0]
    except BaseException:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait()
        raise
    if child.returncode:
        raise SystemExit("the run of %s ended with exit code %d" % (collections, child.returncode))
    return json.loads(output.splitlines()[-1])


def main_against(args) -> int:
    """--against: this checkout and REV alternated, each side's median per step and the ratio this / REV."""
    revision = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", args.against + "^{commit}"], check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip()
    here = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    signal.signal(signal.SIGTERM, lambda *unused: sys.exit(143))  # the temporary worktree is removed (finally, below)
    folder = tempfile.mkdtemp(prefix="gpufleet-bench-against-")
    checkout = os.path.join(folder, revision)
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--quiet", "--detach", checkout, revision], check=True)
    try:
        sides = ((revision, os.path.join(checkout, "collections")), ("this (%s)" % here, os.path.join(ROOT, "collections")))
        for hosts in args.hosts:
            for workers in args.workers:
                runs: dict = {name: [] for name, unused in sides}
                print("\n%d hosts x %d GPUs, %s previous night, dossier processes: %s; %s and this checkout in turn, %d rounds\n"
                      % (hosts, args.gpus, "with a" if args.previous else "no", workers or "one per usable core", revision, args.rounds))
                print("| round | code | " + " | ".join(title for unused, title in STEPS) + " |")
                print("| ---: | --- |" + " ---: |" * len(STEPS))
                for round_number in range(1, args.rounds + 1):
                    for name, collections in sides:
                        row = whole_run_in_process(collections, hosts, args.gpus, workers, args.previous)
                        runs[name].append(row)
                        print("| %d | %s | %s |" % (round_number, name, " | ".join("%.1f" % row[key] for key, unused in STEPS)))
                        sys.stdout.flush()
                (before, unused), (after, unused) = sides
                print("\n| step | %s (median) | %s (median) | ratio this / %s |" % (before, after, revision))
                print("| --- | ---: | ---: | ---: |")
                for key, title in STEPS:
                    old = statistics.median(row[key] for row in runs[before])
                    new = statistics.median(row[key] for row in runs[after])
                    print("| %s | %.1f | %.1f | %s |" % (title, old, new, "%.2f" % (new / old) if old else "-"))
                sys.stdout.flush()
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", checkout], check=False)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 100, 1000])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--dossiers", type=int, default=20, help="dossiers rendered per fleet size to time one (default 20)")
    parser.add_argument("--whole-run", action="store_true", help="time render_run over every host (see above)")
    parser.add_argument("--previous", action="store_true",
                        help="with --whole-run: the fleet has a previous run too, so drift is judged (a nightly run)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 0],
                        help="with --whole-run: dossier processes to try (0: one per usable core; default 1 0)")
    parser.add_argument("--history", action="store_true",
                        help="with --whole-run: update the run index after render_run, as the report action does")
    parser.add_argument("--acceptance-host", action="store_true",
                        help="the pages of one synthetic host of --gpus GPUs after the acceptance profile: sizes and time")
    parser.add_argument("--against", metavar="REV",
                        help="with --whole-run: time this checkout and the collection at commit REV in turn (see above)")
    parser.add_argument("--rounds", type=int, default=2, help="with --against: how many times each side runs (default 2)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # --against's child: one JSON row
    args = parser.parse_args()
    if args.json:
        signal.signal(signal.SIGTERM, lambda *unused: sys.exit(143))  # its temporary results are removed (finally)
        imported = os.path.realpath(report_render.__file__)
        wanted = os.path.dirname(os.path.realpath(os.environ.get(COLLECTIONS_VARIABLE) or os.path.join(ROOT, "collections")))
        if not imported.startswith(wanted + os.sep):  # the checkout that holds collections/ (its link to the collection)
            raise SystemExit("the collection imported is %s, not the one under %s" % (imported, wanted))
        print(json.dumps(measure_whole_run(args.hosts[0], args.gpus, args.workers[0], args.previous)))
        return 0
    if args.against:
        return main_against(args)
    if args.acceptance_host:
        return main_acceptance_host(args.gpus)
    if args.whole_run:
        return main_whole_run(args)
    print("| hosts | GPUs | checks | load s | judge s | fleet outputs s | load + judge + fleet s | fleet files MiB "
          "| one host's dossier (HTML + MD) s | peak RSS MiB | verdicts |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for hosts in args.hosts:
        row = measure(hosts, args.gpus, args.dossiers)
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        verdicts = ", ".join("%s %d" % item for item in sorted(row["verdicts"].items()))
        print("| %d | %d | %d | %.2f | %.2f | %.2f | %.2f | %.1f | %.3f (mean of %d) | %.0f | %s |" % (
            row["hosts"], row["gpus"], row["checks"], row["load_s"], row["judge_s"], row["fleet_s"], row["fleet_total_s"],
            row["fleet_mib"], row["dossier_s"], row["dossiers_measured"], peak_mib, verdicts))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
