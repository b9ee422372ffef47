"""Benchmark: one fleet validated whole, in `serial` batches, and as slices of one run, on one SSH test fleet.

    sudo .venv/bin/python benchmarks/slices_and_batches.py [--hosts 16] [--rack-size 4] [--slices 2,4] [--out slices.json]

On one test fleet (tests/fleet/netns_fleet.py, racks of --rack-size hosts), one after the other, each into a fresh
results directory, the health profile with `cuda_init: false`:
  whole                 `ansible-playbook validate.yml`: every host in one run, one report
  serial-R              the same plays with `serial: R` and `order: inventory` on the probe play (docs/scale.md's recipe):
                        one batch per rack, one run id, one report after the last batch
  slices-K-parallel     K `ansible-playbook validate.yml` runs started at once, each `--limit` to its share of the racks,
                        all with one run id, `gpufleet_resume=true` and `gpufleet_report=false`; then one
                        `playbooks/report.yml` for that run id (the slice workflow, as AWX job slicing runs it)
  slices-K-sequential   the same slices one after another, then the report
Each is measured as benchmarks/scale_health_run.py measures a run (wall; the controller's CPU: every ansible-playbook of
the workload, their workers, ssh clients and ControlPersist masters; the hosts' CPU), and must end with every host of
the fleet in the one run's fleet.json with a dossier. A sliced workload runs under this script's own --drive mode,
which starts the slices and the report and waits for them, so that their CPU is counted as one command's.

It prints a markdown table beside `whole`: wall and controller CPU, and each as a ratio to `whole`. The hosts share this
machine's cores with the controller, so what the slices cost in wall time here is the controller's extra CPU queued on
the same cores; on a real fleet only the controller's part is shared. A benchmark, not a test; it needs root.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import yaml  # ansible-core's dependency, in the same environment

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scale_health_run as measured  # noqa: E402  pylint: disable=wrong-import-position

netns_fleet = measured.netns_fleet
ROOT = measured.ROOT
BIN = os.path.dirname(sys.executable)
PARAMS = json.dumps({"probe_params": {"health": {"cuda_init": False}}})
PROBE_PLAY = "Probe every host"


def health_argv(playbook: str, fleet, results: str, *extra: str) -> list:
    return [os.path.join(BIN, "ansible-playbook"), playbook, "-i", fleet.inventory_path, "-e", "gpufleet_profile=health",
            "-e", "gpufleet_results_dir=%s" % results, "-e", PARAMS] + list(extra)


def serial_playbook(work: str, batch: int) -> str:
    """playbooks/validate.yml with `serial` and `order: inventory` on its probe play, beside a link to the collections
    folder so that the copy finds this collection as validate.yml does."""
    with open(os.path.join(ROOT, "playbooks", "validate.yml"), encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    probe = [play for play in plays if play.get("name") == PROBE_PLAY]
    if len(probe) != 1:
        raise SystemExit("playbooks/validate.yml has no play named %r to give serial" % PROBE_PLAY)
    probe[0].update(serial=batch, order="inventory")
    directory = os.path.join(work, "serial-%d" % batch)
    os.makedirs(directory, exist_ok=True)
    link = os.path.join(directory, "collections")
    if not os.path.islink(link):
        os.symlink(os.path.join(ROOT, "collections"), link)
    path = os.path.join(directory, "validate_serial.yml")
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(plays, handle, sort_keys=False)
    return path


def racks_of(fleet) -> list:
    racks = []
    for index in range((len(fleet.names) + fleet.rack_size - 1) // fleet.rack_size):
        racks.append(netns_fleet.rack_name(index))
    return racks


def slice_plan(fleet, results: str, count: int, parallel: bool) -> dict:
    run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-slices%d" % count
    racks = racks_of(fleet)
    shares = [racks[index::count] for index in range(count) if racks[index::count]]
    slices = [health_argv("validate.yml", fleet, results, "-e", "gpufleet_run_id=%s" % run_id, "-e", "gpufleet_resume=true",
                          "-e", "gpufleet_report=false", "--limit", ":".join(share)) for share in shares]
    report = [os.path.join(BIN, "ansible-playbook"), "playbooks/report.yml", "-i", fleet.inventory_path,
              "-e", "gpufleet_run_id=%s" % run_id, "-e", "gpufleet_results_dir=%s" % results, "-e", "gpufleet_hosts=all"]
    return {"parallel": parallel, "slices": slices, "report": report, "cwd": ROOT}


def drive(plan_path: str) -> int:
    """--drive: run a sliced workload's slices (at once or in turn), then its report; the worst exit code."""
    with open(plan_path, encoding="utf-8") as handle:
        plan = json.load(handle)
    codes = []
    if plan["parallel"]:
        running = [subprocess.Popen(argv, cwd=plan["cwd"]) for argv in plan["slices"]]  # pylint: disable=consider-using-with
        codes.extend(process.wait() for process in running)
    else:
        codes.extend(subprocess.run(argv, cwd=plan["cwd"], check=False).returncode for argv in plan["slices"])
    codes.append(subprocess.run(plan["report"], cwd=plan["cwd"], check=False).returncode)
    print("slice exit codes %s, report %d" % (codes[:-1], codes[-1]))
    return max(codes)


def workloads(fleet, work: str, batches: list, slice_counts: list) -> list:
    """(label, argv or a slice plan, results dir) of every workload."""
    found = []
    results = os.path.join(work, "results-whole")
    found.append(("whole", health_argv("validate.yml", fleet, results), results))
    for batch in batches:
        results = os.path.join(work, "results-serial-%d" % batch)
        found.append(("serial-%d" % batch, health_argv(serial_playbook(work, batch), fleet, results), results))
    for count in slice_counts:
        for parallel in (True, False):
            label = "slices-%d-%s" % (count, "parallel" if parallel else "sequential")
            results = os.path.join(work, "results-" + label)
            plan_path = os.path.join(work, label + ".json")
            with open(plan_path, "w", encoding="utf-8") as handle:
                json.dump(slice_plan(fleet, results, count, parallel), handle)
            found.append((label, [sys.executable, os.path.abspath(__file__), "--drive", plan_path], results))
    return found


def run_workload(fleet, label: str, argv: list, results: str, log_path: str, args) -> dict:
    shutil.rmtree(results, ignore_errors=True)
    row = measured.measure_command(fleet, argv, log_path, args, cwd=ROOT)
    outcome = measured.check_results(results, fleet, row["exit_code"], row.pop("ended_at"))
    row.update(workload=label, log=log_path, ok=outcome["ok"], problems=outcome["problems"],
               verdicts=outcome.get("verdicts"), report_s=outcome.get("report_s"))
    return row


def markdown(rows: list) -> str:
    whole = next((row for row in rows if row["workload"] == "whole"), None)
    out = ["| workload | wall s | x whole | controller CPU s | x whole | hosts' CPU s | peak PSS MiB | ok |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for row in rows:
        out.append("| %s | %.1f | %s | %.1f | %s | %.1f | %.0f | %s |" % (
            row["workload"], row["wall_s"], "%.2f" % (row["wall_s"] / whole["wall_s"]) if whole else "—",
            row["controller_cpu_s"], "%.2f" % (row["controller_cpu_s"] / whole["controller_cpu_s"]) if whole else "—",
            row["host_cpu_s"], row["peak_pss_mib"], "yes" if row["ok"] else "NO: " + "; ".join(row["problems"])[:120]))
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__)
    parser.add_argument("--drive", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--rack-size", type=int, default=4)
    parser.add_argument("--serial", type=measured.int_list, default=None, help="serial batch sizes (default: the rack size)")
    parser.add_argument("--slices", type=measured.int_list, default=[2, 4])
    parser.add_argument("--out", default=None)
    measured.add_measurement_arguments(parser, quiet_window_s=5.0, settle_s=120.0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    if args.drive:
        return drive(args.drive)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, measured._on_signal)  # pylint: disable=protected-access
    work = tempfile.mkdtemp(prefix="gpufleet-slices-")
    rows, failures = [], []
    fleet = netns_fleet.Fleet(os.path.join(work, "fleet"), hosts=args.hosts, rack_size=args.rack_size, prefix="sb")
    try:
        fleet.up()
        plan = workloads(fleet, work, args.serial or [args.rack_size], args.slices)
        run_workload(fleet, "warm-up", plan[0][1], os.path.join(work, "warmup-results"), os.path.join(work, "warmup.log"), args)
        for label, command, results in plan:
            row = run_workload(fleet, label, command, results, os.path.join(work, label + ".log"), args)
            rows.append(row)
            print("  %s: wall %.1f s, controller CPU %.1f s, hosts' CPU %.1f s, others %.0f%%%s"
                  % (label, row["wall_s"], row["controller_cpu_s"], row["host_cpu_s"], 100 * row["others_share"],
                     "" if row["ok"] else " FAILED: " + "; ".join(row["problems"])), file=sys.stderr)
            if not row["ok"]:
                failures.append("%s: %s" % (label, "; ".join(row["problems"])))
    except (KeyboardInterrupt, measured.Interrupted) as exc:
        failures.append("interrupted: %s" % (exc or "Ctrl-C"))
    finally:
        measured.stop_control_masters(fleet)
        fleet.down()
        if args.keep:
            print("kept: %s" % work, file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(markdown(rows))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump({"machine": measured.machine(), "hosts": args.hosts, "rack_size": args.rack_size, "runs": rows},
                      handle, indent=1)
    for failure in failures:
        print("FAILED: %s" % failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
