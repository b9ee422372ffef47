"""The run index at fleet scale (issue 48, point 5; docs/history.md, "Cost"): the index built night after night by
update_index, as each report does, then one more night's update, one host's trend query and the index's size.

    benchmarks/history_scale.py --dir DIR --hosts 1000 --runs 365            # 1,000 hosts x 365 nightly runs
    benchmarks/history_scale.py --dir DIR --hosts 10000 --runs 30 --gpus 8   # 10,000 hosts x 30 runs
    benchmarks/history_scale.py --dir DIR --hosts 20 --runs 5                # seconds

The runs are files update_index reads, never rows inserted directly: a template run of min(--hosts, 100) synthetic
hosts (benchmarks/synthetic_fleet.py) is judged and reported for real (judge_run, render_run), and each night's
fleet.json and outcomes/<host>.json are written from its host entries and outcomes: host i takes template host
i % 100's entry under its own name and GPU UUIDs (the same each night), each metric value times (1 + 1 % noise), the
night's run id (a nightly timestamp) and start time.

Disk: 365 full fleet.json of 1,000 hosts would be 30 GB, so the nightly runs are compact (the default): a host entry
keeps every metric, setting, reason and non-passing check, and of the passing and skipped checks, which the index reads
only for a GPU's status, one per GPU (its worst); the index's rows of a compact run are those of the full run
(tests/unit/history/test_history_scale.py compares them, table by table), its fleet.json is about 8 times smaller, so
its update reads less JSON than a real report's would. The one more night measured last is full (every check of the
template entries), as a real report writes it. --full makes every night full.

Prints a line per night while building, then a table. Timings are of this process on this machine, one sitting.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from synthetic_fleet import write_synthetic_run  # noqa: E402

from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.index import index_path, update_index  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.history.queries import run_query  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below  # noqa: E402
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run  # noqa: E402

TEMPLATE_HOSTS = 100
TEMPLATE_RUN_ID = "20251130T020000Z-template"
FIRST_NIGHT = datetime.datetime(2025, 12, 1, 2, 0, 0)
TREND_METRIC = "health.idle_power_w"
NOISE = 0.01
WARM_QUERIES = 50
COLD_QUERIES = 5


def night(number: int) -> Tuple[str, str]:
    """(run id, start time) of night number (0 the first)."""
    moment = FIRST_NIGHT + datetime.timedelta(days=number)
    return moment.strftime("%Y%m%dT%H%M%SZ") + "-nightly", moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def host_name(number: int) -> str:
    return "gpu-r%03d-n%05d" % (number // 32, number)


def gpu_uuid(host_number: int, index: int) -> str:
    return "GPU-%08x-%04x-0000-0000-000000000000" % (host_number, index)


def compact_entry(entry: Dict[str, Any]) -> Dict[str, Any]:
    """The entry with every check that does not pass or skip, and one passing or skipped check per GPU (its worst)."""
    rank = {"skip": 0, "pass": 1}
    kept, per_gpu = [], {}
    for check in entry["checks"]:
        if check.get("status") not in rank:
            kept.append(check)
            continue
        uuid = check.get("gpu_uuid")
        if uuid and (uuid not in per_gpu or rank[check["status"]] > rank[per_gpu[uuid]["status"]]):
            per_gpu[uuid] = check
    return dict(entry, checks=kept + [per_gpu[uuid] for uuid in sorted(per_gpu)])


class Template:
    """A judged host entry and its outcome as %-format texts: the host's name, its GPUs' UUIDs, each metric value, the
    run id and start time filled in for each host of each night."""

    def __init__(self, host: str, entry: Dict[str, Any], outcome: Dict[str, Any], compact: bool):
        entry = compact_entry(entry) if compact else entry
        uuids = sorted({item["gpu_uuid"] for item in entry["checks"] + entry["metrics"] if item.get("gpu_uuid")})
        self.gpu_indexes = {uuid: index for index, uuid in enumerate(uuids)}
        self.values = [metric["value"] if isinstance(metric.get("value"), (int, float)) else None for metric in entry["metrics"]]
        marked = dict(entry, metrics=[dict(metric, value="@@value%d@@" % number if value is not None else None)
                                      for number, (metric, value) in enumerate(zip(entry["metrics"], self.values))])
        self.entry = self._format(json.dumps(marked), host, uuids)
        self.outcome = self._format(json.dumps(dict(outcome, run_id="@@run_id@@", run_started="@@started@@")), host, uuids)

    def _format(self, text: str, host: str, uuids: List[str]) -> str:
        text = text.replace("%", "%%").replace(host, "%(host)s")
        for uuid in uuids:
            text = text.replace(uuid, "%%(gpu%d)s" % self.gpu_indexes[uuid])
        for name in ("run_id", "started"):
            text = text.replace("@@%s@@" % name, "%%(%s)s" % name)
        for number in range(len(self.values)):
            text = text.replace('"@@value%d@@"' % number, "%%(value%d)s" % number)
        return text

    def fill(self, host_number: int, host: str, run_id: str, started: str, rng: random.Random) -> Tuple[str, str]:
        fields: Dict[str, Any] = {"host": host, "run_id": run_id, "started": started}
        fields.update(("gpu%d" % index, gpu_uuid(host_number, index)) for index in self.gpu_indexes.values())
        fields.update(("value%d" % number, repr(round(value * (1 + rng.gauss(0.0, NOISE)), 3)))
                      for number, value in enumerate(self.values) if value is not None)
        return self.entry % fields, self.outcome % fields


def make_templates(work: str, hosts: int, gpus: int, compact: bool) -> Tuple[Dict[str, Any], List[Template], List[Template]]:
    """Judge and report a run of min(hosts, TEMPLATE_HOSTS) synthetic hosts in work/template; returns fleet.json's
    other members and the templates (compact, full) of its hosts."""
    results = os.path.join(work, "template")
    if not os.path.exists(os.path.join(results, TEMPLATE_RUN_ID, "fleet.json")):
        names = write_synthetic_run(results, TEMPLATE_RUN_ID, min(hosts, TEMPLATE_HOSTS), gpus=gpus, seed=1)
        path = os.path.join(results, TEMPLATE_RUN_ID)
        run = load_run(path, names, {})
        render_run(path, names, {}, text_writer_below(results), judgement=judge_run(run, results, {}), loaded=run, workers=0)
    path = os.path.join(results, TEMPLATE_RUN_ID)
    with open(os.path.join(path, "fleet.json"), encoding="utf-8") as handle:
        fleet = json.load(handle)
    outcomes = {}
    for name in fleet["hosts"]:
        with open(os.path.join(path, "outcomes", name + ".json"), encoding="utf-8") as handle:
            outcomes[name] = json.load(handle)
    made = {kind: [Template(name, entry, outcomes[name], kind) for name, entry in sorted(fleet["hosts"].items())] for kind in (True, False)}
    members = {key: value for key, value in fleet.items() if key not in ("hosts", "hosts_worst_first", "gate")}
    return members, made[compact], made[False]


def write_night(results: str, number: int, hosts: int, members: Dict[str, Any], templates: List[Template],
                name_of: Callable[[int], str] = host_name) -> Tuple[str, int]:
    """Write night number's fleet.json and outcomes, its hosts named by name_of(host number); returns (run id,
    fleet.json bytes)."""
    run_id, started = night(number)
    path = os.path.join(results, run_id)
    os.makedirs(os.path.join(path, "outcomes"), exist_ok=True)
    rng = random.Random(number)
    names = [name_of(host_number) for host_number in range(hosts)]
    head = dict(members, run_id=run_id, previous_run_id=night(number - 1)[0] if number else None, hosts_worst_first=names,
                gate={"enforced": False, "passed": True, "gating_verdicts": [], "gating_hosts": []})
    temporary = os.path.join(path, ".fleet.json.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(head)[:-1] + ', "hosts": {')
        for host_number, name in enumerate(names):
            entry, outcome = templates[host_number % len(templates)].fill(host_number, name, run_id, started, rng)
            handle.write("%s%s: %s" % (", " if host_number else "", json.dumps(name), entry))
            with open(os.path.join(path, "outcomes", name + ".json"), "w", encoding="utf-8") as outcome_handle:
                outcome_handle.write(outcome)
        handle.write("}}")
    os.replace(temporary, os.path.join(path, "fleet.json"))
    return run_id, os.path.getsize(os.path.join(path, "fleet.json"))


def timed_update(results: str) -> Tuple[float, float]:
    """(wall s, CPU s) of one update_index, failing on a problem."""
    started, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
    done = update_index(results)
    now = resource.getrusage(resource.RUSAGE_SELF)
    if done.problems or len(done.indexed) != 1:
        raise SystemExit("update_index did not index exactly one run: %s" % done)
    return time.monotonic() - started, now.ru_utime + now.ru_stime - cpu.ru_utime - cpu.ru_stime


def trend_query_ms(results: str, host: str) -> Tuple[float, int]:
    """(milliseconds, rows) of one host's metric over every run, through queries.run_query (the index opened read-only
    and closed, as the command does)."""
    started = time.perf_counter()
    rows = run_query(results, "metric", {"host": host, "metric": TREND_METRIC})
    return (time.perf_counter() - started) * 1000, len(rows)


def cold_trend_query_ms(results: str, host: str) -> float:
    """One trend query in a fresh process: SQLite's cache empty, the OS page cache as the build left it."""
    found = subprocess.run([sys.executable, os.path.abspath(__file__), "--query-once", results, "--query-host", host],
                           capture_output=True, text=True, check=True)
    return float(found.stdout.split()[0])


def counts(results: str) -> Dict[str, int]:
    connection = sqlite3.connect("file:%s?mode=ro" % index_path(results), uri=True)
    try:
        return {table: connection.execute("SELECT count(*) FROM %s" % table).fetchone()[0]
                for table in ("runs", "hosts", "causes", "gpus", "metrics", "settings")}
    finally:
        connection.close()


def size_mib(path: str) -> float:
    return sum(os.path.getsize(path + side) for side in ("", "-wal", "-shm") if os.path.exists(path + side)) / 2 ** 20


def vm_hwm_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def build(args: argparse.Namespace) -> Dict[str, Any]:
    results = os.path.join(args.dir, "results")
    if os.path.exists(results):
        shutil.rmtree(results)
    os.makedirs(results)
    members, templates, full = make_templates(args.dir, args.hosts, args.gpus, not args.full)
    walls, cpus, fleet_bytes = [], [], 0
    for number in range(args.runs):
        run_id, size = write_night(results, number, args.hosts, members, templates)
        wall, cpu = timed_update(results)
        walls.append(wall)
        cpus.append(cpu)
        fleet_bytes += size
        print("night %d/%d %s: fleet.json %.1f MB, update %.2f s wall, %.2f CPU-s, index %.0f MiB"
              % (number + 1, args.runs, run_id, size / 1e6, wall, cpu, size_mib(index_path(results))), flush=True)
    per_run = counts(results)
    run_id, full_size = write_night(results, args.runs, args.hosts, members, full)
    last_wall, last_cpu = timed_update(results)
    host = host_name(args.hosts // 2)
    warm = [trend_query_ms(results, host) for unused in range(WARM_QUERIES)]
    cold = [cold_trend_query_ms(results, host_name(number * args.hosts // COLD_QUERIES + 1)) for number in range(COLD_QUERIES)]
    return {"hosts": args.hosts, "runs": args.runs, "gpus": args.gpus, "compact": not args.full, "walls": walls, "cpus": cpus,
            "fleet_mb": fleet_bytes / 1e6 / max(args.runs, 1), "rows": {table: value // max(args.runs, 1) for table, value in per_run.items()},
            "last": (run_id, full_size / 1e6, last_wall, last_cpu), "warm": warm, "cold": cold,
            "index_mib": size_mib(index_path(results)), "peak_rss_mib": vm_hwm_mib(), "host": host}


def table(found: Dict[str, Any]) -> str:
    walls, warm = found["walls"], [ms for ms, unused in found["warm"]]
    rows = found["rows"]
    lines = [
        "| what | measured |", "|---|---|",
        "| fleet | %d hosts x %d runs, %d GPUs a host (%s nights) |"
        % (found["hosts"], found["runs"], found["gpus"], "compact" if found["compact"] else "full"),
        "| rows a night | %d hosts, %d causes, %d GPUs, %d metric values, %d settings; fleet.json %.1f MB |"
        % (rows["hosts"], rows["causes"], rows["gpus"], rows["metrics"], rows["settings"], found["fleet_mb"]),
        "| build: %d updates, one a night | %.1f s wall (%.1f CPU-s); a night: median %.2f s, first %.2f s, last %.2f s |"
        % (len(walls), sum(walls), sum(found["cpus"]), statistics.median(walls), walls[0], walls[-1]),
        "| one more night (full fleet.json, %.1f MB) | %.2f s wall, %.2f CPU-s |" % found["last"][1:],
        "| trend query, %s, %s, %d rows, warm (median of %d in one process) | %.2f ms (min %.2f, max %.2f) |"
        % (found["host"], TREND_METRIC, found["warm"][0][1], len(warm), statistics.median(warm), min(warm), max(warm)),
        "| trend query, cold (first of a fresh process, %d hosts) | median %.2f ms (%s) |"
        % (len(found["cold"]), statistics.median(found["cold"]), ", ".join("%.1f" % ms for ms in found["cold"])),
        "| index on disk | %.0f MiB |" % found["index_mib"],
        "| peak RSS of this process | %.0f MiB |" % found["peak_rss_mib"],
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", help="a work directory (its results/ is made afresh)")
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=365)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--full", action="store_true", help="every night's fleet.json full, not compact")
    parser.add_argument("--query-once", metavar="RESULTS", help=argparse.SUPPRESS)
    parser.add_argument("--query-host", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.query_once:
        print("%.3f" % trend_query_ms(args.query_once, args.query_host)[0])
        return 0
    if not args.dir or args.hosts < 1 or args.runs < 1 or args.gpus < 4:
        parser.error("--dir, --hosts and --runs of 1 or more, and --gpus of 4 or more (synthetic_fleet's faults are on GPUs 1 and 3) are needed")
    print(table(build(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
