"""Benchmark: the probe engine beside Ansible's own floor, on one SSH test fleet, in one run.

    sudo .venv/bin/python benchmarks/engine_vs_ansible_floor.py [--hosts 1,8,16,32] [--repeats 1] \\
        [--also-checkout OLD_CLONE] [--out engine.json]

For each host count it builds one test fleet (tests/fleet/netns_fleet.py) and runs, one after the other and in turn:
  ping     `ansible all -m ansible.builtin.ping`: one pipelined module run per host, the least Ansible can do
  script   a one-task play, `ansible.builtin.script` copying a small Python file to every host and running it there
  health   `ansible-playbook validate.yml -e gpufleet_profile=health` with `cuda_init: false`, as this checkout has it
  health@X the same with the checkout given by --also-checkout (for example the code before a change), same fleet
  health-nightly  the health profile of this checkout into a results directory that keeps the previous run (primed by
           one untimed run), as a nightly sweep runs: the hosts' Python discovery may reuse the previous run's torch
           import proof, and the report judges drift against the previous run
Each is measured as benchmarks/scale_health_run.py measures a run (wall, the controller's CPU with its ssh clients and
ControlPersist masters, the hosts' CPU, the probe's own CPU: the detached job processes on the hosts).

Derived, per workload and host count:
  controller CPU per host      controller CPU / hosts, and the marginal cost: (CPU(N) - CPU(1)) / (N - 1)
  overhead per host            (wall - the probe's own CPU / cores) / hosts: the hosts share this machine's cores with the
                               controller, so the probe's own work is taken out at the rate the cores could do it
  x script                     a workload's overhead per host / the script play's, at the same host count

Targets (issue 18): health's overhead per host <= 1.5 x the script play's, and <= 0.3 controller CPU-s per host.
It prints markdown tables and writes every measurement as JSON (--out). A benchmark, not a test; it needs root.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scale_health_run as measured  # noqa: E402  pylint: disable=wrong-import-position

netns_fleet = measured.netns_fleet
ROOT = measured.ROOT
BIN = os.path.dirname(sys.executable)
FLOOR_SCRIPT = '''import json, os, sys
print(json.dumps({"changed": False, "host": os.uname()[1], "python": sys.version.split()[0]}))
'''
TARGET_X_SCRIPT = 1.5
TARGET_CPU_PER_HOST_S = 0.3


def script_play(work: str) -> str:
    script = os.path.join(work, "floor_script.py")
    with open(script, "w") as handle:
        handle.write(FLOOR_SCRIPT)
    play = os.path.join(work, "floor_script_play.yml")
    with open(play, "w") as handle:
        handle.write("- name: Copy a Python file to every host and run it there\n"
                     "  hosts: all\n  gather_facts: false\n  tasks:\n"
                     "    - name: Run the file\n      ansible.builtin.script:\n"
                     "        cmd: %s\n        executable: \"{{ ansible_python_interpreter }}\"\n" % json.dumps(script))
    return play


def workloads(fleet, work: str, checkouts: list, forks) -> list:
    """(label, argv, cwd, results dir or None) of every workload of one round."""
    fork_args = ["--forks", str(forks)] if forks else []
    found = [("ping", [os.path.join(BIN, "ansible"), "all", "-i", fleet.inventory_path, "-m", "ansible.builtin.ping"]
              + fork_args, ROOT, None),
             ("script", [os.path.join(BIN, "ansible-playbook"), "-i", fleet.inventory_path, script_play(work)] + fork_args,
              ROOT, None)]
    runs = list(checkouts) + [(NIGHTLY, checkouts[0][1])]
    for label, checkout in runs:
        results = os.path.join(work, "results-" + label.replace("@", "-"))
        found.append((label, [os.path.join(BIN, "ansible-playbook"), "validate.yml", "-i", fleet.inventory_path,
                              "-e", "gpufleet_profile=health", "-e", "gpufleet_results_dir=%s" % results,
                              "-e", json.dumps({"probe_params": {"health": {"cuda_init": False}}})] + fork_args,
                      checkout, results))
    return found


NIGHTLY = "health-nightly"


def _keep_newest_run(results: str) -> None:
    """The results directory with its newest run alone (the previous night), or empty."""
    runs = sorted(entry for entry in os.listdir(results) if entry != "latest") if os.path.isdir(results) else []
    for run in runs[:-1]:
        shutil.rmtree(os.path.join(results, run), ignore_errors=True)


def run_workload(fleet, label, argv, cwd, results, log_path, args) -> dict:
    if results and label == NIGHTLY:
        _keep_newest_run(results)
    elif results:
        shutil.rmtree(results, ignore_errors=True)
    row = measured.measure_command(fleet, argv, log_path, args, cwd=cwd)
    ended_at = row.pop("ended_at")
    row.update(workload=label, log=log_path, ok=row["exit_code"] == 0, problems=[])
    if results:
        outcome = measured.check_results(results, fleet, row["exit_code"], ended_at, newest=label == NIGHTLY)
        row.update(ok=outcome["ok"], problems=outcome["problems"], probe_s_mean=round(outcome["probe_s_mean"], 3),
                   report_s=outcome["report_s"])
    elif row["exit_code"] != 0:
        row["problems"] = ["exit code %d (see %s)" % (row["exit_code"], log_path)]
    return row


def best(rows: list) -> dict:
    good = [row for row in rows if row["ok"]] or rows
    return min(good, key=lambda row: row["wall_s"])


def derive(rows: list, cores: int) -> list:
    """One line per workload and host count from the best run of each, with the ratios to the script play."""
    keyed = {}
    for row in rows:
        keyed.setdefault((row["workload"], row["hosts"]), []).append(row)
    chosen = {key: best(found) for key, found in keyed.items()}
    lines = []
    for (workload, hosts), row in sorted(chosen.items(), key=lambda item: (item[0][1], item[0][0])):
        one = chosen.get((workload, 1))
        marginal = ((row["controller_cpu_s"] - one["controller_cpu_s"]) / (hosts - 1)) if one and hosts > 1 else None
        overhead = (row["wall_s"] - row["host_detached_cpu_s"] / cores) / hosts
        lines.append({"workload": workload, "hosts": hosts, "wall_s": row["wall_s"], "controller_cpu_s": row["controller_cpu_s"],
                      "cpu_per_host_s": row["controller_cpu_s"] / hosts, "marginal_cpu_per_host_s": marginal,
                      "probe_cpu_s": row["host_detached_cpu_s"], "host_cpu_s": row["host_cpu_s"],
                      "overhead_per_host_s": overhead, "others_share": row["others_share"],
                      "peak_pss_mib": row["peak_pss_mib"], "ok": row["ok"], "runs": len(keyed[(workload, hosts)])})
    scripts = {line["hosts"]: line for line in lines if line["workload"] == "script"}
    for line in lines:
        floor = scripts.get(line["hosts"])
        line["x_script"] = line["overhead_per_host_s"] / floor["overhead_per_host_s"] if floor else None
    return lines


def markdown(lines: list) -> str:
    out = ["| hosts | workload | wall s | controller CPU s | CPU s per host | marginal CPU s per host | probe's own CPU s "
           "| hosts' CPU s | overhead s per host | x script | peak PSS MiB | others | ok |",
           "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for line in lines:
        out.append("| %d | %s | %.1f | %.1f | %.2f | %s | %.1f | %.1f | %.2f | %s | %.0f | %.0f %% | %s |" % (
            line["hosts"], line["workload"], line["wall_s"], line["controller_cpu_s"], line["cpu_per_host_s"],
            "%.2f" % line["marginal_cpu_per_host_s"] if line["marginal_cpu_per_host_s"] is not None else "—",
            line["probe_cpu_s"], line["host_cpu_s"], line["overhead_per_host_s"],
            "%.2f" % line["x_script"] if line["x_script"] is not None else "—", line["peak_pss_mib"],
            100 * line["others_share"], "yes" if line["ok"] else "NO"))
    return "\n".join(out)


def host_list(text: str) -> list:
    return [int(part) for part in text.split(",") if part]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__)
    parser.add_argument("--hosts", type=host_list, default=[1, 8, 16, 32])
    parser.add_argument("--repeats", type=int, default=1, help="rounds of every workload per host count (default 1)")
    parser.add_argument("--forks", type=int, default=None, help="--forks for every command (default: ansible.cfg's)")
    parser.add_argument("--also-checkout", default=None, help="another clone of this repository whose validate.yml runs too")
    parser.add_argument("--out", default=None)
    measured.add_measurement_arguments(parser, quiet_window_s=5.0, settle_s=120.0)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    checkouts = [("health", ROOT)]
    if args.also_checkout:
        checkouts.append(("health@" + os.path.basename(os.path.abspath(args.also_checkout)), os.path.abspath(args.also_checkout)))
    work = tempfile.mkdtemp(prefix="gpufleet-floor-")
    rows, failures = [], []
    cores = len(os.sched_getaffinity(0))
    try:
        for count in args.hosts:
            fleet = netns_fleet.Fleet(os.path.join(work, "f%d" % count), hosts=count, rack_size=8)
            try:
                fleet.up()
                for label, command, cwd, results in workloads(fleet, work, checkouts, args.forks):
                    if label in ("ping", NIGHTLY):  # untimed: the first contact; the nightly's previous night
                        run_workload(fleet, "warm-up", command, cwd, results, os.path.join(work, "warmup.log"), args)
                for repeat in range(args.repeats):
                    for label, command, cwd, results in workloads(fleet, work, checkouts, args.forks):
                        log_path = os.path.join(work, "n%d-%s-r%d.log" % (count, label.replace("@", "-"), repeat))
                        row = run_workload(fleet, label, command, cwd, results, log_path, args)
                        row["repeat"] = repeat
                        rows.append(row)
                        print("  %d hosts, %s: wall %.1f s, controller CPU %.1f s, probe CPU %.1f s, others %.0f%%%s"
                              % (count, label, row["wall_s"], row["controller_cpu_s"], row["host_detached_cpu_s"],
                                 100 * row["others_share"], "" if row["ok"] else " FAILED: " + "; ".join(row["problems"])),
                              file=sys.stderr)
                        if not row["ok"]:
                            failures.append("%d hosts, %s: %s" % (count, label, "; ".join(row["problems"])))
            finally:
                measured.stop_control_masters(fleet)
                fleet.down()
        lines = derive(rows, cores)
        print(markdown(lines))
        if args.out:
            with open(args.out, "w") as handle:
                json.dump({"machine": measured.machine(), "cores": cores, "runs": rows, "derived": lines}, handle, indent=1)
    finally:
        if args.keep:
            print("kept: %s" % work, file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    for failure in failures:
        print("FAILED: %s" % failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
