"""Benchmark: a health-only run of the real playbook over SSH against test fleets of 1, 4, 16 and 32 hosts.

    sudo .venv/bin/python benchmarks/scale_health_run.py [--hosts 1,4,16,32] [--repeats 2] [--forks 64,5] [--out scale.json]

For each host count it builds a test fleet (tests/fleet/netns_fleet.py: every host a network namespace with its own
address and sshd, racks of 8), runs `ansible-playbook validate.yml -i <fleet inventory> -e gpufleet_profile=health`
--repeats times (each into a fresh results directory, with no SSH control master left from the run before), checks that
every host was reached and reported, and tears the fleet down, also when something fails or the script is interrupted.
It prints a markdown table and writes the measurements as JSON (--out). It needs root (namespaces, veths, a bridge).

What is measured, per run:
  wall          from starting ansible-playbook to reaping it
  controller    CPU (user + sys) of the ansible-playbook process tree: os.wait4's rusage of ansible-playbook (itself, its
                forked workers and their ssh clients, all waited for), plus the SSH ControlPersist masters (detached
                processes, read from /proc just before they are told to exit); and of the main process alone (one thread
                of work: the strategy, the results of every worker, the output), its last /proc sample
  peak memory   the largest sum of RSS over that tree and the masters, sampled from /proc every --sample-s (RSS counts the
                pages that forked workers share with their parent once per process, so the sum is an upper bound); the
                largest sum of PSS (shared pages divided among their users, from /proc/PID/smaps_rollup, every 5th sample);
                and ru_maxrss of wait4 (the largest single process)
  host side     CPU of the test hosts (they share this machine's cores with the controller): what each host's sshd waited
                for (sessions, module runs, polls; cutime + cstime of the listening sshd), plus the detached async job
                processes (the probe itself), sampled (a lower bound: up to one sample interval per process is missed)
  others        CPU of everything else on the machine during the run (/proc/stat busy time minus the above; steal, the time
                the hypervisor gave this machine's virtual CPUs to others, is recorded apart): other jobs
                sharing the machine. A run where others used more than --max-others of the machine is marked disturbed
                and run again (at most --retries times); disturbed runs stay in the JSON but not in the summary.
  load          the 1-minute load average before the run and its mean and maximum during the run
  phases        the probe as the host timed it (the envelope's duration_s), the SSH and Ansible overhead around it
                (result stored minus task started minus duration_s), and the report play (the playbook's end minus the
                last stored health result)
Before each run the script waits (at most --settle-s) until the machine is quiet: at most --max-busy cores busy over
--quiet-window-s seconds. Target: 32 hosts in under 3x the wall time of one host (best runs compared).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "fleet"))

import netns_fleet  # noqa: E402  pylint: disable=wrong-import-position

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
PROFILE = "health"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
MIB = 2 ** 20
TARGET_RATIO = 3.0
PSS_EVERY = 5
SAMPLE_KEYS = ("comm", "ppid", "cpu", "children_cpu", "rss", "start")


class Interrupted(Exception):
    """SIGTERM or SIGHUP arrived; the fleets must still be torn down."""


def _on_signal(signum, frame):
    del frame
    raise Interrupted("signal %d" % signum)


# ----- /proc -----
def read_stat(pid: str):
    """(comm, ppid, utime + stime, cutime + cstime, rss bytes, starttime) of a process from /proc/PID/stat, or None."""
    try:
        with open("/proc/%s/stat" % pid) as handle:
            content = handle.read()
    except OSError:
        return None
    right = content.rfind(")")
    fields = content[right + 2:].split()
    try:
        return (content[content.find("(") + 1:right], int(fields[1]), int(fields[11]) + int(fields[12]),
                int(fields[13]) + int(fields[14]), int(fields[21]) * PAGE_SIZE, int(fields[19]))
    except (IndexError, ValueError):
        return None


def all_processes() -> dict:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = read_stat(entry)
            if stat is not None:
                found[int(entry)] = dict(zip(SAMPLE_KEYS, stat))
    return found


def netns_of(pid: int):
    try:
        found = os.stat("/proc/%d/ns/net" % pid)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def cmdline_of(pid: int) -> str:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def pss_of(pid: int) -> int:
    """Proportional set size in bytes (smaps_rollup), 0 when unreadable."""
    try:
        with open("/proc/%d/smaps_rollup" % pid) as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return 0
    return 0


def cpu_times() -> tuple:
    """(busy, steal): seconds of CPU time the whole machine spent busy on its own work (every core) and seconds the
    hypervisor took its virtual CPUs away (steal), from the first line of /proc/stat."""
    with open("/proc/stat") as handle:
        values = [int(value) for value in handle.readline().split()[1:]] + [0] * 10
    idle = values[3] + values[4]
    steal = values[7]
    guest = values[8] + values[9]  # guest time is already counted in user and nice
    return (sum(values) - idle - steal - guest) / CLK_TCK, steal / CLK_TCK


def cpu_busy_s() -> float:
    return cpu_times()[0]


def load1() -> float:
    with open("/proc/loadavg") as handle:
        return float(handle.read().split()[0])


def descendants(processes: dict, root: int) -> set:
    children = {}
    for pid, info in processes.items():
        children.setdefault(info["ppid"], []).append(pid)
    found = set()
    pending = [root] if root in processes else []
    while pending:
        pid = pending.pop()
        found.add(pid)
        pending.extend(children.get(pid, []))
    return found


def under(processes: dict, pid: int, ancestors: set) -> bool:
    seen = 0
    while pid in processes and seen < 64:
        if pid in ancestors:
            return True
        pid = processes[pid]["ppid"]
        seen += 1
    return pid in ancestors


# ----- the sampler -----
class Sampler(threading.Thread):
    """Samples /proc every interval while ansible-playbook runs: the controller tree's memory, the SSH masters' and the
    detached host processes' CPU, and the load average."""

    def __init__(self, root_pid: int, control_path_dir: str, namespaces: set, listeners: set, interval_s: float):
        super().__init__(daemon=True)
        self.root_pid = root_pid
        self.control_path_dir = control_path_dir
        self.namespaces = namespaces
        self.listeners = listeners
        self.interval_s = interval_s
        self.stop_event = threading.Event()
        self.masters = {}          # (pid, start) -> last seen CPU ticks
        self.detached = {}         # (pid, start) -> last seen CPU ticks of host processes outside any sshd session
        self.master_pids = {}      # (pid, start) -> bool: an SSH master of this fleet
        self.netns_cache = {}      # (pid, start) -> namespace key
        self.peak = {"rss": 0, "pss": 0, "processes": 0, "workers": 0, "ssh": 0, "worker_pss_mean": 0.0,
                     "main_rss": 0, "rss_at_peak": {}}
        self.loads = []
        self.samples = 0
        self.cpu_s = 0.0
        self.main_cpu = 0          # CPU ticks of the ansible-playbook main process alone (the strategy, results, output)

    def run(self) -> None:
        while not self.stop_event.is_set():
            started = time.thread_time()
            self.sample()
            self.cpu_s += time.thread_time() - started
            self.stop_event.wait(self.interval_s)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=10)
        started = time.thread_time()
        self.sample()  # the masters' CPU up to now; they exit only when told to
        self.cpu_s += time.thread_time() - started

    def is_master(self, key, pid: int, info: dict) -> bool:
        if key not in self.master_pids:
            self.master_pids[key] = info["comm"] == "ssh" and self.control_path_dir in cmdline_of(pid)
        return self.master_pids[key]

    def sample(self) -> None:
        processes = all_processes()
        self.samples += 1
        self.loads.append(load1())
        tree = descendants(processes, self.root_pid)
        controller = set(tree)
        if self.root_pid in processes:
            self.main_cpu = processes[self.root_pid]["cpu"]
        for pid, info in processes.items():
            key = (pid, info["start"])
            if pid in tree:
                continue
            if self.is_master(key, pid, info):
                self.masters[key] = info["cpu"]
                controller.add(pid)
                continue
            if key not in self.netns_cache:
                self.netns_cache[key] = netns_of(pid)
            if self.netns_cache[key] in self.namespaces and pid not in self.listeners \
                    and not under(processes, pid, self.listeners):
                self.detached[key] = info["cpu"]
        self.record_memory(processes, tree, controller)

    def record_memory(self, processes: dict, tree: set, controller: set) -> None:
        rss = sum(processes[pid]["rss"] for pid in controller)
        ssh = [pid for pid in controller if processes[pid]["comm"].startswith("ssh")]
        workers = [pid for pid in tree if pid != self.root_pid and not processes[pid]["comm"].startswith("ssh")]
        peak = self.peak
        if rss > peak["rss"]:
            peak.update(rss=rss, processes=len(controller), main_rss=processes.get(self.root_pid, {}).get("rss", 0),
                        rss_at_peak={"ansible_processes": len(workers) + 1, "ssh_processes": len(ssh),
                                     "ssh_rss": sum(processes[pid]["rss"] for pid in ssh)})
        peak["workers"] = max(peak["workers"], len(workers))
        peak["ssh"] = max(peak["ssh"], len(ssh))
        if self.samples % PSS_EVERY == 1:
            pss = {pid: pss_of(pid) for pid in controller}
            total = sum(pss.values())
            if total > peak["pss"]:
                peak["pss"] = total
            if workers and len(workers) >= peak.get("pss_workers", 0):
                peak["pss_workers"] = len(workers)
                peak["worker_pss_mean"] = sum(pss[pid] for pid in workers) / len(workers)

    @property
    def masters_cpu_s(self) -> float:
        return sum(self.masters.values()) / CLK_TCK

    @property
    def detached_cpu_s(self) -> float:
        return sum(self.detached.values()) / CLK_TCK


# ----- the fleet around a run -----
def fleet_namespaces(fleet) -> set:
    keys = set()
    for host in fleet.live_hosts:
        try:
            found = os.stat(os.path.join("/run/netns", host["namespace"]))
        except OSError:
            continue
        keys.add((found.st_dev, found.st_ino))
    return keys


def listener_pids(fleet) -> set:
    return {pid for pid in (fleet.sshd_pid(name) for name in fleet.names) if pid is not None}


def listeners_children_cpu_s(listeners: set) -> float:
    total = 0
    for pid in listeners:
        stat = read_stat(str(pid))
        if stat is not None:
            total += stat[3]
    return total / CLK_TCK


def stop_control_masters(fleet) -> None:
    """Tell the fleet's SSH ControlPersist masters to exit, so the next run starts cold like a new nightly run."""
    ssh = netns_fleet.find_tool("ssh")
    if ssh is None or not os.path.isdir(fleet.control_path_dir):
        return
    for entry in sorted(os.listdir(fleet.control_path_dir)):
        subprocess.run([ssh, "-o", "ControlPath=%s" % os.path.join(fleet.control_path_dir, entry), "-O", "exit", "bench"],
                       capture_output=True, timeout=10, check=False)


def wait_sessions_closed(listeners: set, timeout_s: float = 10.0) -> bool:
    """Wait until no sshd session is left under the listeners, so that their CPU has been credited to the listener."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(info["ppid"] in listeners for info in all_processes().values()):
            return True
        time.sleep(0.1)
    return False


def wait_until_quiet(max_busy: float, window_s: float, settle_s: float) -> dict:
    """Wait (at most settle_s) until the machine's busy cores over window_s are at most max_busy; say how it went."""
    waited_from = time.monotonic()
    while True:
        before = cpu_busy_s()
        time.sleep(window_s)
        busy = (cpu_busy_s() - before) / window_s
        waited = time.monotonic() - waited_from
        if busy <= max_busy or waited >= settle_s:
            return {"busy_cores_before": round(busy, 2), "waited_s": round(waited, 1), "quiet": busy <= max_busy}


def stop_process_group(process) -> None:
    for sig, grace_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if os.waitpid(process.pid, os.WNOHANG)[0] == process.pid:
                process.returncode = -sig
                return
            time.sleep(0.05)


def parse_utc(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def check_results(results_dir: str, fleet, code: int, ended_at: float, newest: bool = False) -> dict:
    """Every host reached and reported; the probe's own time and the overhead around it; the report play's time.
    newest: the results directory keeps earlier runs, and the newest run (by its timestamped id) is the one checked."""
    problems = []
    if code != 0:
        problems.append("ansible-playbook exited with %d" % code)
    runs = sorted(entry for entry in os.listdir(results_dir) if entry != "latest") if os.path.isdir(results_dir) else []
    if newest:
        runs = runs[-1:]
    if len(runs) != 1:
        return {"ok": False, "problems": problems + ["expected one run directory, found %s" % runs]}
    run_dir = os.path.join(results_dir, runs[0])
    durations, overheads, stored, statuses, verdicts = [], [], [], {}, {}
    for name in fleet.names:
        path = os.path.join(run_dir, name, "health.json")
        try:
            with open(path) as handle:
                envelope = json.load(handle)
            mtime = os.path.getmtime(path)
        except (OSError, ValueError) as exc:
            problems.append("%s: no health result (%s)" % (name, exc))
            continue
        statuses[envelope["status"]] = statuses.get(envelope["status"], 0) + 1
        if envelope["status"] in ("unreachable", "error", "timeout"):
            problems.append("%s: health %s: %s" % (name, envelope["status"], envelope["reason"]))
        durations.append(float(envelope["duration_s"]))
        overheads.append(mtime - parse_utc(envelope["started"]) - float(envelope["duration_s"]))
        stored.append(mtime)
    try:
        with open(os.path.join(run_dir, "fleet.json")) as handle:
            hosts = json.load(handle)["hosts"]
        if sorted(hosts) != sorted(fleet.names):
            problems.append("fleet.json lists %d hosts, the fleet has %d" % (len(hosts), len(fleet.names)))
        for host in hosts.values():
            verdicts[host["verdict"]] = verdicts.get(host["verdict"], 0) + 1
        for name in fleet.names:
            if not os.path.exists(os.path.join(run_dir, name, "dossier.html")):
                problems.append("%s: no dossier" % name)
    except (OSError, ValueError, KeyError) as exc:
        problems.append("fleet.json: %s" % exc)
    return {"ok": not problems, "problems": problems[:10], "statuses": statuses, "verdicts": verdicts,
            "probe_s_mean": mean(durations), "probe_s_max": max(durations, default=0.0),
            "overhead_s_mean": mean(overheads), "overhead_s_max": max(overheads, default=0.0),
            "report_s": ended_at - max(stored) if stored else None}


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def measure_command(fleet, argv: list, log_path: str, args, cwd: str = ROOT) -> dict:
    """Run one Ansible command against the fleet and measure it: wall, the controller's CPU and memory, the hosts' CPU
    (the probe's own, detached, apart), the others on the machine. ``ended_at`` and ``exit_code`` are in the answer."""
    quiet = wait_until_quiet(args.max_busy, args.quiet_window_s, args.settle_s)
    namespaces = fleet_namespaces(fleet)
    listeners = listener_pids(fleet)
    load_before = load1()
    listeners_before = listeners_children_cpu_s(listeners)
    busy_before, steal_before = cpu_times()
    with open(log_path, "w") as log:
        started = time.monotonic()
        process = subprocess.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,  # pylint: disable=consider-using-with
                                   start_new_session=True)
    sampler = Sampler(process.pid, fleet.control_path_dir, namespaces, listeners, args.sample_s)
    sampler.start()
    try:
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid == process.pid:
                break
            if time.monotonic() - started > args.timeout_s:
                raise TimeoutError("%s ran past %d s" % (os.path.basename(argv[0]), args.timeout_s))
            time.sleep(0.02)
        wall = time.monotonic() - started
        ended_at = time.time()
        process.returncode = os.waitstatus_to_exitcode(status)
    except BaseException:
        stop_process_group(process)
        sampler.stop()
        raise
    sampler.stop()
    busy_after, steal_after = cpu_times()
    stop_control_masters(fleet)
    sessions_closed = wait_sessions_closed(listeners)
    host_sessions_cpu = listeners_children_cpu_s(listeners) - listeners_before
    playbook_cpu = usage.ru_utime + usage.ru_stime
    controller_cpu = playbook_cpu + sampler.masters_cpu_s
    host_cpu = host_sessions_cpu + sampler.detached_cpu_s
    busy = busy_after - busy_before
    others = max(0.0, busy - controller_cpu - host_cpu - sampler.cpu_s)
    machine_cpus = os.cpu_count() or 1
    peak = sampler.peak
    return {
        "hosts": len(fleet.names), "exit_code": process.returncode, "ended_at": ended_at,
        "wall_s": round(wall, 2), "per_host_s": round(wall / len(fleet.names), 3),
        "controller_cpu_s": round(controller_cpu, 2), "playbook_tree_cpu_s": round(playbook_cpu, 2),
        "playbook_user_s": round(usage.ru_utime, 2), "playbook_sys_s": round(usage.ru_stime, 2),
        "main_process_cpu_s": round(sampler.main_cpu / CLK_TCK, 2), "steal_s": round(steal_after - steal_before, 2),
        "ssh_masters_cpu_s": round(sampler.masters_cpu_s, 2), "ssh_masters": len(sampler.masters),
        "controller_cores_mean": round(controller_cpu / wall, 2),
        "host_cpu_s": round(host_cpu, 2), "host_sessions_cpu_s": round(host_sessions_cpu, 2),
        "host_detached_cpu_s": round(sampler.detached_cpu_s, 2), "sessions_closed": sessions_closed,
        "others_cpu_s": round(others, 2), "others_share": round(others / (wall * machine_cpus), 3),
        "sampler_cpu_s": round(sampler.cpu_s, 2), "samples": sampler.samples,
        "peak_rss_mib": round(peak["rss"] / MIB, 1), "peak_pss_mib": round(peak["pss"] / MIB, 1),
        "main_rss_mib_at_peak": round(peak["main_rss"] / MIB, 1), "processes_at_peak": peak["processes"],
        "at_peak": peak["rss_at_peak"], "max_workers": peak["workers"], "max_ssh_processes": peak["ssh"],
        "worker_pss_mib_mean": round(peak["worker_pss_mean"] / MIB, 1),
        "ru_maxrss_mib": round(usage.ru_maxrss / 1024, 1),
        "load1_before": load_before, "load1_mean": round(mean(sampler.loads), 2),
        "load1_max": max(sampler.loads, default=load_before), **quiet,
        "disturbed": others / (wall * machine_cpus) > args.max_others,
    }


def run_once(fleet, forks, results_dir: str, log_path: str, args) -> dict:
    """One health run of the real playbook against the fleet, measured."""
    argv = [ANSIBLE_PLAYBOOK, "validate.yml", "-i", fleet.inventory_path, "-e", "gpufleet_profile=%s" % PROFILE,
            "-e", "gpufleet_results_dir=%s" % results_dir]
    if forks:
        argv += ["--forks", str(forks)]
    if not args.cuda_init:
        argv += ["-e", json.dumps({"probe_params": {PROFILE: {"cuda_init": False}}})]
    row = measure_command(fleet, argv, log_path, args)
    outcome = check_results(results_dir, fleet, row["exit_code"], row.pop("ended_at"))
    row.update({
        "forks": forks or "ansible.cfg",
        "probe_s_mean": round(outcome["probe_s_mean"], 2), "probe_s_max": round(outcome["probe_s_max"], 2),
        "ssh_ansible_overhead_s_mean": round(outcome["overhead_s_mean"], 2),
        "ssh_ansible_overhead_s_max": round(outcome["overhead_s_max"], 2),
        "report_s": round(outcome["report_s"], 2) if outcome["report_s"] is not None else None,
        "statuses": outcome.get("statuses", {}), "verdicts": outcome.get("verdicts", {}),
        "ok": outcome["ok"], "problems": outcome["problems"],
    })
    return row


# ----- the whole benchmark -----
def measure_fleet(count: int, work: str, args, runs: list, failures: list) -> None:
    fleet = netns_fleet.Fleet(os.path.join(work, "f%d" % count), hosts=count, rack_size=args.rack_size,
                              prefix="%s%d" % (args.prefix, count))
    try:
        began = time.monotonic()
        fleet.up()
        print("fleet %s: %d hosts up in %.1f s" % (fleet.prefix, count, time.monotonic() - began), file=sys.stderr)
        if args.warmup and not runs:
            run_once(fleet, None, os.path.join(work, "warmup"), os.path.join(work, "warmup.log"), args)
        for forks in args.forks:
            for repeat in range(args.repeats):
                for attempt in range(args.retries + 1):
                    name = "n%d-f%s-r%d-a%d" % (count, forks or "cfg", repeat, attempt)
                    row = run_once(fleet, forks, os.path.join(work, name), os.path.join(work, name + ".log"), args)
                    row.update(repeat=repeat, attempt=attempt, log=os.path.join(work, name + ".log"))
                    runs.append(row)
                    print("  %s: wall %.1f s, controller CPU %.1f s, hosts CPU %.1f s, others %.0f%%, load1 %.2f -> %.2f%s%s"
                          % (name, row["wall_s"], row["controller_cpu_s"], row["host_cpu_s"], 100 * row["others_share"],
                             row["load1_before"], row["load1_max"], " DISTURBED" if row["disturbed"] else "",
                             "" if row["ok"] else " FAILED: " + "; ".join(row["problems"])), file=sys.stderr)
                    if not row["ok"]:
                        failures.append("%s: %s" % (name, "; ".join(row["problems"])))
                    if row["ok"] and not row["disturbed"]:
                        break
    finally:
        stop_control_masters(fleet)
        try:
            fleet.down()
        except netns_fleet.FleetError as exc:
            failures.append("tearing down fleet %s: %s" % (fleet.prefix, exc))
            print("netns_fleet: %s" % exc, file=sys.stderr)


def summarise(runs: list) -> list:
    groups = {}
    for row in runs:
        groups.setdefault((row["hosts"], str(row["forks"])), []).append(row)
    summary = []
    for (hosts, forks), rows in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1] != "ansible.cfg", item[0][1])):
        clean = [row for row in rows if row["ok"] and not row["disturbed"]]
        used = clean or [row for row in rows if row["ok"]] or rows
        best = min(used, key=lambda row: row["wall_s"])
        summary.append({
            "hosts": hosts, "forks": forks, "runs": len(used), "runs_disturbed_or_failed": len(rows) - len(clean),
            "only_disturbed": not clean, "wall_s_best": best["wall_s"], "wall_s_mean": round(mean(row["wall_s"] for row in used), 2),
            "per_host_s": round(best["wall_s"] / hosts, 3),
            "controller_cpu_s": round(mean(row["controller_cpu_s"] for row in used), 2),
            "controller_cpu_s_per_host": round(mean(row["controller_cpu_s"] for row in used) / hosts, 3),
            "ssh_masters_cpu_s": round(mean(row["ssh_masters_cpu_s"] for row in used), 2),
            "main_process_cpu_s": round(mean(row["main_process_cpu_s"] for row in used), 2),
            "steal_s": round(mean(row["steal_s"] for row in used), 2),
            "host_cpu_s": round(mean(row["host_cpu_s"] for row in used), 2),
            "others_share": round(mean(row["others_share"] for row in used), 3),
            "peak_rss_mib": max(row["peak_rss_mib"] for row in used), "peak_pss_mib": max(row["peak_pss_mib"] for row in used),
            "max_workers": max(row["max_workers"] for row in used),
            "worker_pss_mib": round(mean(row["worker_pss_mib_mean"] for row in used), 1),
            "ru_maxrss_mib": max(row["ru_maxrss_mib"] for row in used),
            "load1_before": [row["load1_before"] for row in used], "load1_max": max(row["load1_max"] for row in used),
            "probe_s_mean": round(mean(row["probe_s_mean"] for row in used), 2),
            "overhead_s_mean": round(mean(row["ssh_ansible_overhead_s_mean"] for row in used), 2),
            "report_s": round(mean(row["report_s"] or 0.0 for row in used), 2),
        })
    base = {row["forks"]: row["wall_s_best"] for row in summary if row["hosts"] == 1}
    one_host = base.get("ansible.cfg") or next(iter(base.values()), None)
    for row in summary:
        row["ratio_to_1_host"] = round(row["wall_s_best"] / one_host, 2) if one_host else None
    return summary


def markdown(summary: list) -> str:
    lines = [
        "| hosts | forks | runs | wall s (best / mean) | x 1 host | s per host | controller CPU s (per host) | main process s | ssh masters s "
        "| test hosts' CPU s | others' share | peak RSS MiB (sum) | peak PSS MiB | workers | PSS per worker MiB | ru_maxrss MiB "
        "| load1 before | load1 max | probe s on host | SSH + Ansible overhead s per host | report play s |",
        "| ---: | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in summary:
        lines.append(
            "| %d | %s | %d%s | %.1f / %.1f | %s | %.2f | %.1f (%.2f) | %.1f | %.1f | %.1f | %.0f%% | %.0f | %.0f | %d | %.1f | %.0f "
            "| %s | %.2f | %.2f | %.2f | %.1f |"
            % (row["hosts"], row["forks"], row["runs"], " (disturbed)" if row["only_disturbed"] else "", row["wall_s_best"],
               row["wall_s_mean"], "%.2f" % row["ratio_to_1_host"] if row["ratio_to_1_host"] is not None else "-",
               row["per_host_s"], row["controller_cpu_s"], row["controller_cpu_s_per_host"], row["main_process_cpu_s"], row["ssh_masters_cpu_s"],
               row["host_cpu_s"], 100 * row["others_share"], row["peak_rss_mib"], row["peak_pss_mib"], row["max_workers"],
               row["worker_pss_mib"], row["ru_maxrss_mib"], ", ".join("%.2f" % value for value in row["load1_before"]),
               row["load1_max"], row["probe_s_mean"], row["overhead_s_mean"], row["report_s"]))
    return "\n".join(lines)


def machine() -> dict:
    memory_kib = 0
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                memory_kib = int(line.split()[1])
    version = subprocess.run([ANSIBLE_PLAYBOOK, "--version"], capture_output=True, text=True, check=False, cwd=ROOT)
    return {"cpus": os.cpu_count(), "memory_gib": round(memory_kib / 2 ** 20, 1), "kernel": platform.release(),
            "python": platform.python_version(), "ansible": (version.stdout.splitlines() or ["?"])[0],
            "forks_in_ansible_cfg": ansible_cfg_forks()}


def ansible_cfg_forks():
    try:
        with open(os.path.join(ROOT, "ansible.cfg")) as handle:
            for line in handle:
                if line.replace(" ", "").startswith("forks="):
                    return int(line.split("=", 1)[1])
    except (OSError, ValueError):
        return None
    return None


def add_measurement_arguments(parser, quiet_window_s: float = 10.0, settle_s: float = 900.0) -> None:
    """The options of measure_command (sampling, limits, the quiet machine it waits for), for every benchmark that
    measures Ansible commands with it."""
    parser.add_argument("--sample-s", type=float, default=0.2, help="seconds between /proc samples (default 0.2)")
    parser.add_argument("--timeout-s", type=int, default=900, help="limit of one playbook run (default 900)")
    parser.add_argument("--max-busy", type=float, default=0.5, help="cores busy before a run counts as quiet (default 0.5)")
    parser.add_argument("--quiet-window-s", type=float, default=quiet_window_s,
                        help="seconds the quiet check measures (default %g)" % quiet_window_s)
    parser.add_argument("--settle-s", type=float, default=settle_s, help="longest wait for a quiet machine (default %g)" % settle_s)
    parser.add_argument("--max-others", type=float, default=0.15,
                        help="share of the machine others may use during a run before it counts as disturbed (default 0.15)")


def int_list(text: str) -> list:
    return [int(value) for value in text.split(",") if value.strip()]


def forks_list(text: str) -> list:
    """Comma-separated fork counts; 'cfg' (or 0) means ansible.cfg's value (no --forks)."""
    values = []
    for value in text.split(","):
        value = value.strip()
        if value:
            values.append(None if value in ("cfg", "0") else int(value))
    return values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[4:]))
    parser.add_argument("--hosts", type=int_list, default=[1, 4, 16, 32], help="host counts, comma-separated (default 1,4,16,32)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per host count and forks (default 2)")
    parser.add_argument("--forks", type=forks_list, default=[None],
                        help="fork counts, comma-separated; cfg: ansible.cfg's value (default cfg)")
    parser.add_argument("--rack-size", type=int, default=8, help="hosts per rack group (default 8)")
    parser.add_argument("--prefix", default="gfsc", help="fleet name prefix; the host count is appended (default gfsc)")
    parser.add_argument("--out", default=None, help="write the measurements as JSON here")
    add_measurement_arguments(parser)
    parser.add_argument("--retries", type=int, default=3, help="extra attempts of a disturbed or failed run (default 3)")
    parser.add_argument("--no-cuda-init", dest="cuda_init", action="store_false",
                        help="run the health probe with cuda_init false: it then does not start a fresh Python that imports torch, "
                             "so the test hosts, which share this machine's cores, do little and the controller's share shows")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the untimed first run")
    parser.add_argument("--work-root", default=tempfile.gettempdir(),
                        help="where the fleets, results and logs go (a fresh folder in it; default the temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the results and logs (printed at the end)")
    args = parser.parse_args(argv)
    reason = netns_fleet.unavailable_reason()
    if reason:
        print("cannot build a test fleet: %s" % reason, file=sys.stderr)
        return 2
    if not os.access(ANSIBLE_PLAYBOOK, os.X_OK):
        print("no ansible-playbook beside this Python (%s); run it with .venv/bin/python" % ANSIBLE_PLAYBOOK, file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    os.makedirs(args.work_root, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gfsc-", dir=args.work_root)
    runs, failures = [], []
    report = {"benchmark": "scale_health_run", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": machine(), "profile": PROFILE, "cuda_init": args.cuda_init, "arguments": dict(vars(args)),
              "runs": runs}
    try:
        for count in args.hosts:
            try:
                measure_fleet(count, work, args, runs, failures)
            except (netns_fleet.FleetError, TimeoutError, OSError, subprocess.SubprocessError) as exc:
                failures.append("%d hosts: %s: %s" % (count, type(exc).__name__, exc))  # the fleet is down again; go on
    except (KeyboardInterrupt, Interrupted) as exc:
        failures.append("interrupted: %s" % (exc or "Ctrl-C"))
    finally:
        summary = summarise(runs) if runs else []
        report.update(summary=summary, failures=failures)
        largest = [row for row in summary if row["forks"] == "ansible.cfg" and row["hosts"] == 32]
        if largest and largest[0]["ratio_to_1_host"] is not None:
            report["target"] = {"hosts": 32, "max_ratio": TARGET_RATIO, "ratio": largest[0]["ratio_to_1_host"],
                                "met": largest[0]["ratio_to_1_host"] < TARGET_RATIO}
        if args.out:
            with open(args.out, "w") as handle:
                json.dump(report, handle, indent=2)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(markdown(summary))
    if "target" in report:
        print("\ntarget: 32 hosts in under %.0fx the 1-host time: %.2fx, %s"
              % (TARGET_RATIO, report["target"]["ratio"], "met" if report["target"]["met"] else "NOT met"))
    if args.keep:
        print("results and logs: %s" % work)
    for failure in failures:
        print("problem: %s" % failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
