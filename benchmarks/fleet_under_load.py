"""Benchmark: slow is not unreachable. A health run of the real playbook over SSH against 200 inventory hosts served by
15 sshds (aliases: several inventory names with one address, as a fleet behind a bastion or a red team's rig has them)
and 5 wedged sshds (they accept, send their banner, then say nothing), on a controller that other work keeps busy.

    sudo .venv/bin/python benchmarks/fleet_under_load.py [--hosts 200] [--sshds 15] [--wedged 5] [--load 2]
                                                         [--late 14] [--forks cfg] [--out under_load.json] [--keep]

It builds a test fleet of sshds + wedged network-namespace hosts (tests/fleet/netns_fleet.py), writes an inventory of
--hosts names (the wedged hosts under their own names, the others spread over the live sshds), starts --load busy
processes on the controller (each spins one core for the whole run), gives --late of the hosts on live sshds a Python
that answers the engine's first wait for the running probe past its deadline while the connection lives
(tests/fleet/faults/late_answers.py, with a probe still running when first asked after: the stall a loaded controller
gave 14 of 200 hosts in issue 45, made to happen on any machine), runs `ansible-playbook validate.yml -e
gpufleet_profile=health` once, measured as benchmarks/scale_health_run.py measures a run, and reads fleet.json back.
It prints one markdown row:

  wall s             from starting ansible-playbook to reaping it
  hosts judged       inventory hosts with a verdict other than unreachable
  false unreachable  hosts on a live sshd whose verdict is unreachable (goal: 0)
  wedged named       wedged hosts whose verdict is unreachable (goal: all of them)
  answered late      hosts whose result notes a wait that went unanswered and was asked again (goal: --late)
  timeout            hosts whose health probe ended as timeout (slow, said so, with the measured times)
  controller CPU s   user + system CPU of the playbook's process tree and its SSH masters
  load1 max          the controller's 1-minute load average, highest during the run

and exits 1 when a host on a live sshd was unreachable or a wedged host was not. It needs root (namespaces, veths, a
bridge).
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fleet"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import netns_fleet  # noqa: E402  pylint: disable=wrong-import-position
from faults import faulty_python, late_answers  # noqa: E402  pylint: disable=wrong-import-position
import scale_health_run as measured  # noqa: E402  pylint: disable=wrong-import-position

PROFILE = "health"
# One core kept busy by another job on the controller: a fixed program, no input in it.
SPIN = "while True:\n    pass\n"


def alias_inventory(fleet, hosts: int, wedged: list, late: int, work: str) -> str:
    """The fleet's inventory with ``hosts`` names: the wedged hosts under their own names, the rest spread over the live
    sshds in turn (the fleet's connection variables as they are), the first ``late`` of those answering a wait late."""
    with open(fleet.inventory_path) as handle:
        header = handle.read().split("  children:\n", 1)[0]
    live = [host for host in fleet.hosts if host["name"] not in wedged]
    lines = [header.rstrip("\n"), "  hosts:"]
    for name in wedged:
        lines += ["    %s:" % name, "      ansible_host: %s" % netns_fleet.yaml_string(fleet.host(name)["address"])]
    slow = faulty_python.make_interpreter(os.path.join(work, "slow"), "slow") if late else None
    for index in range(hosts - len(wedged)):
        host = live[index % len(live)]
        lines += ["    %s-a%03d:" % (fleet.prefix, index), "      ansible_host: %s" % netns_fleet.yaml_string(host["address"])]
        if index < late:
            answers = late_answers.make_interpreter(os.path.join(work, "late", "a%03d" % index), "once")
            lines += ["      ansible_python_interpreter: %s" % netns_fleet.yaml_string(answers),
                      "      gpufleet_python: %s" % netns_fleet.yaml_string(slow)]
    path = os.path.join(fleet.directory, "aliases.yml")
    with open(path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def start_load(count: int) -> list:
    return [subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL,  # pylint: disable=consider-using-with
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for unused in range(count)]


def stop_load(spinners: list) -> None:
    for process in spinners:
        process.kill()
        process.wait()


def verdicts(run_dir: str) -> dict:
    with open(os.path.join(run_dir, "fleet.json")) as handle:
        fleet = json.load(handle)
    return {name: entry["verdict"] for name, entry in fleet["hosts"].items()}


def health_statuses(run_dir: str, names: list) -> dict:
    statuses = {}
    for name in names:
        try:
            with open(os.path.join(run_dir, name, "health.json")) as handle:
                statuses[name] = json.load(handle).get("status")
        except (OSError, ValueError):
            statuses[name] = "missing"
    return statuses


def run_under_load(args, work: str) -> dict:
    fleet = netns_fleet.Fleet(os.path.join(work, "fleet"), hosts=args.sshds + args.wedged, rack_size=8, prefix=args.prefix)
    spinners = []
    try:
        fleet.up()
        wedged = fleet.names[args.sshds:]
        for name in wedged:
            fleet.wedge_sshd(name)
        inventory = alias_inventory(fleet, args.hosts, wedged, args.late, work)
        results = os.path.join(work, "results")
        argv = [measured.ANSIBLE_PLAYBOOK, "validate.yml", "-i", inventory, "-e", "gpufleet_profile=%s" % PROFILE,
                "-e", "gpufleet_results_dir=%s" % results, "-e", "gpufleet_run_id=under-load",
                "-e", json.dumps({"probe_params": {PROFILE: {"cuda_init": False}}, "gpufleet_gate": False})]
        if args.forks:
            argv += ["--forks", str(args.forks)]
        measured.wait_until_quiet(args.max_busy, args.quiet_window_s, args.settle_s)
        spinners = start_load(args.load)
        busy = argparse.Namespace(**dict(vars(args), max_busy=float(os.cpu_count() or 1) + args.load))  # quiet was waited for
        row = measured.measure_command(fleet, argv, os.path.join(work, "run.log"), busy)
        stop_load(spinners)
        run_dir = os.path.join(results, "under-load")
        found = verdicts(run_dir)
        statuses = health_statuses(run_dir, sorted(found))
        live = [name for name in found if name not in wedged]
        return {
            "hosts": len(found), "sshds": args.sshds, "wedged": len(wedged), "load": args.load, "late": args.late,
            "answered_late": sorted(name for name in live if _answered_late(run_dir, name)),
            "forks": args.forks or measured.ansible_cfg_forks() or "ansible.cfg", "exit_code": row["exit_code"],
            "wall_s": row["wall_s"], "controller_cpu_s": row["controller_cpu_s"], "load1_max": row["load1_max"],
            "judged": sum(1 for verdict in found.values() if verdict != "unreachable"),
            "false_unreachable": sorted(name for name in live if found[name] == "unreachable"),
            "wedged_named": sorted(name for name in wedged if found.get(name) == "unreachable"),
            "timeout": sorted(name for name, status in statuses.items() if status == "timeout"),
            "verdicts": {verdict: sum(1 for value in found.values() if value == verdict) for verdict in set(found.values())},
        }
    finally:
        stop_load(spinners)
        measured.stop_control_masters(fleet)
        fleet.down()


def _answered_late(run_dir: str, name: str) -> bool:
    """Whether the host's health result says that a wait went unanswered and was asked again."""
    try:
        with open(os.path.join(run_dir, name, "health.json")) as handle:
            notes = json.load(handle).get("notes") or []
    except (OSError, ValueError):
        return False
    return any("went unanswered while the connection lived" in str(note) for note in notes)


def markdown(row: dict) -> str:
    return "\n".join([
        "| hosts | sshds | wedged | load | late | forks | wall s | hosts judged | false unreachable | wedged named | "
        "answered late | timeout | controller CPU s | load1 max |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| %d | %d | %d | %d | %d | %s | %.0f | %d | %d | %d of %d | %d | %d | %.0f | %.1f |" % (
            row["hosts"], row["sshds"], row["wedged"], row["load"], row["late"], row["forks"], row["wall_s"], row["judged"],
            len(row["false_unreachable"]), len(row["wedged_named"]), row["wedged"], len(row["answered_late"]),
            len(row["timeout"]), row["controller_cpu_s"], row["load1_max"]),
    ])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[4:]))
    parser.add_argument("--hosts", type=int, default=200, help="inventory hosts (default 200)")
    parser.add_argument("--sshds", type=int, default=15, help="live sshds the hosts but the wedged are spread over (default 15)")
    parser.add_argument("--wedged", type=int, default=5, help="wedged sshds, one inventory host each (default 5)")
    parser.add_argument("--late", type=int, default=14,
                        help="hosts on live sshds whose first wait is answered past its deadline (default 14)")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 1,
                        help="busy processes on the controller during the run (default: one per core)")
    parser.add_argument("--forks", type=lambda text: None if text in ("cfg", "0") else int(text), default=None,
                        help="ansible-playbook --forks; cfg: ansible.cfg's value (default cfg)")
    parser.add_argument("--prefix", default="gfld", help="fleet name prefix (default gfld)")
    parser.add_argument("--out", default=None, help="write the measurement as JSON here")
    parser.add_argument("--work-root", default=tempfile.gettempdir(), help="where the fleet, results and log go")
    parser.add_argument("--keep", action="store_true", help="keep the results and log (printed at the end)")
    measured.add_measurement_arguments(parser, quiet_window_s=5.0, settle_s=120.0)
    args = parser.parse_args(argv)
    args.max_others = 1.0  # the load is the point: it is not a disturbance
    reason = netns_fleet.unavailable_reason()
    if reason:
        print("cannot build a test fleet: %s" % reason, file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, measured._on_signal)  # pylint: disable=protected-access
    os.makedirs(args.work_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gfld-", dir=args.work_root)
    try:
        row = run_under_load(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    row["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    row["machine"] = measured.machine()
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(row, handle, indent=2)
    print(markdown(row))
    for name in row["false_unreachable"]:
        print("false unreachable: %s" % name, file=sys.stderr)
    if args.keep:
        print("results and log: %s" % work)
    return 1 if row["false_unreachable"] or len(row["wedged_named"]) != row["wedged"] else 0


if __name__ == "__main__":
    sys.exit(main())
