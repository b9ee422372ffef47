"""A real Slurm on one machine for the tests: a private munged, one slurmctld and one slurmd per node (``slurmd -N``,
each on its own port), all in the foreground as this process's children, from Debian's packages
(scripts/install-system-packages). Nothing under /etc or /run is read or written: the key, the socket, the config,
the state and the logs are under the cluster's directory, and sinfo/scontrol find the config through SLURM_CONF.

    cluster = SlurmCluster(tmp_dir, {"n1": ["gpu"], "n2": ["gpu"], "n3": ["cpu"]}).up()
    cluster.scontrol("update", "NodeName=n3", "State=DRAIN", "Reason=admin: fan")
    cluster.nodes()   # {name: NodeState} from sinfo --json
    cluster.down()

Root only (slurmd runs jobs as any user, so Debian's slurmd must start as root). Only argv-list subprocesses. The
daemons are stopped with the process that started them, even one killed with SIGKILL (a parent-death signal).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import Dict, List, Mapping, Optional, Sequence

# The collection as its own checkout names it (collections/ansible_collections/gpufleet/validation), for a run outside
# pytest, whose configuration already puts it on the path.
_COLLECTIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "collections")
if _COLLECTIONS not in sys.path:
    sys.path.append(_COLLECTIONS)

from ansible_collections.gpufleet.validation.plugins.module_utils.process_tree import set_parent_death_signal  # noqa: E402  pylint: disable=wrong-import-position

DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("sinfo", "scontrol")
UP_TIMEOUT_S = 60.0


class SlurmUnavailable(RuntimeError):
    pass


def unavailable_reason() -> Optional[str]:
    if os.geteuid() != 0:
        return "not root (slurmd must start as root)"
    missing = [path for path in DAEMONS if not os.access(path, os.X_OK)]
    missing += [name for name in CLIENTS if shutil.which(name) is None]
    if missing:
        return "missing %s (scripts/install-system-packages installs Debian's slurmctld, slurmd, slurm-client, munge)" \
            % ", ".join(missing)
    return None


def free_ports(count: int) -> List[int]:
    sockets = []
    try:
        for unused in range(count):
            handle = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            handle.bind(("127.0.0.1", 0))
            sockets.append(handle)
        return [handle.getsockname()[1] for handle in sockets]
    finally:
        for handle in sockets:
            handle.close()


class SlurmCluster:
    def __init__(self, directory: str, partitions_of: Mapping[str, Sequence[str]]):
        self.dir = os.path.abspath(str(directory))
        self.partitions_of = {node: list(parts) for node, parts in partitions_of.items()}
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.socket = os.path.join(self.dir, "run", "munge.socket")
        self.processes: List[subprocess.Popen] = []
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    # ------------------------------------------------------------------ up and down
    def up(self) -> "SlurmCluster":
        reason = unavailable_reason()
        if reason:
            raise SlurmUnavailable(reason)
        for sub in ("run", "state", "spool", "log", "munge"):
            os.makedirs(os.path.join(self.dir, sub), mode=0o700, exist_ok=True)
        key = os.path.join(self.dir, "munge", "munge.key")
        with open(key, "wb") as handle:
            handle.write(os.urandom(1024))
        os.chmod(key, 0o400)
        try:
            self._start(["/usr/sbin/munged", "-F", "--force", "--key-file", key, "--socket", self.socket,
                         "--pid-file", os.path.join(self.dir, "run", "munged.pid"),
                         "--log-file", os.path.join(self.dir, "log", "munged.log"),
                         "--seed-file", os.path.join(self.dir, "munge", "munged.seed")], "munged")
            self._wait(lambda: os.path.exists(self.socket), "munged's socket")
            self._write_conf()
            self._start(["/usr/sbin/slurmctld", "-D", "-i", "-f", self.conf], "slurmctld")
            for node in self.partitions_of:
                self._start(["/usr/sbin/slurmd", "-D", "-N", node, "-f", self.conf], "slurmd-" + node)
            self._wait(self._all_up, "every node up in sinfo --json")
        except BaseException:
            self.down()
            raise
        return self

    def down(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        self.processes = []

    def _start(self, argv: List[str], name: str) -> None:
        log = open(os.path.join(self.dir, "log", name + ".out"), "wb")  # pylint: disable=consider-using-with
        try:
            self.processes.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                   env=self.env, start_new_session=True,
                                                   preexec_fn=_stop_with_parent))
        finally:
            log.close()

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + UP_TIMEOUT_S
        while time.monotonic() < deadline:
            dead = [process.args[0] for process in self.processes if process.poll() is not None]
            if dead:
                logs = os.path.join(self.dir, "log")
                raise SlurmUnavailable("%s exited while waiting for %s; logs in %s" % (", ".join(dead), what, logs))
            if ready():
                return
            time.sleep(0.2)
        raise SlurmUnavailable("no %s after %.0f s; logs in %s" % (what, UP_TIMEOUT_S, os.path.join(self.dir, "log")))

    def _write_conf(self) -> None:
        ports = free_ports(2 + len(self.partitions_of))
        lines = ["ClusterName=gpufleettest", "SlurmctldHost=localhost", "SlurmctldPort=%d" % ports[0],
                 "SlurmdPort=%d" % ports[1], "AuthType=auth/munge", "CredType=cred/munge",
                 "AuthInfo=socket=%s" % self.socket, "SlurmUser=root", "SlurmdUser=root",
                 "StateSaveLocation=%s" % os.path.join(self.dir, "state"),
                 "SlurmdSpoolDir=%s" % os.path.join(self.dir, "spool", "%n"),
                 "SlurmctldPidFile=%s" % os.path.join(self.dir, "run", "slurmctld.pid"),
                 "SlurmdPidFile=%s" % os.path.join(self.dir, "run", "slurmd-%n.pid"),
                 "SlurmctldLogFile=%s" % os.path.join(self.dir, "log", "slurmctld.log"),
                 "SlurmdLogFile=%s" % os.path.join(self.dir, "log", "slurmd-%n.log"),
                 "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
                 "ReturnToService=2", "MpiDefault=none", "JobCompType=jobcomp/none",
                 "AccountingStorageType=accounting_storage/none"]
        partitions: Dict[str, List[str]] = {}
        for position, (node, parts) in enumerate(self.partitions_of.items()):
            lines.append("NodeName=%s NodeHostname=localhost Port=%d CPUs=1 RealMemory=100 State=UNKNOWN"
                         % (node, ports[2 + position]))
            for part in parts:
                partitions.setdefault(part, []).append(node)
        for position, (part, nodes) in enumerate(partitions.items()):
            lines.append("PartitionName=%s Nodes=%s State=UP%s" % (part, ",".join(nodes), " Default=YES" if not position else ""))
        with open(self.conf, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")

    def _all_up(self) -> bool:
        try:
            nodes = self.sinfo()["nodes"]
        except (subprocess.CalledProcessError, ValueError, KeyError):
            return False
        names = {entry["name"] for entry in nodes if "IDLE" in _words(entry)}
        return names >= set(self.partitions_of)

    # ------------------------------------------------------------------ clients
    def sinfo(self) -> dict:
        return json.loads(subprocess.run(["sinfo", "--json"], env=self.env, check=True, capture_output=True,
                                         text=True, timeout=30).stdout)

    def scontrol(self, *words: str) -> str:
        return subprocess.run(["scontrol", *words], env=self.env, check=True, capture_output=True, text=True,
                              timeout=30).stdout

    def job(self, node: str, seconds: int = 600) -> str:
        """Submit a real job that holds node (sleep seconds) and wait until Slurm shows the node allocated or mixed; its
        job id (scancel it when done)."""
        answer = subprocess.run(["sbatch", "--parsable", "-w", node, "-o", os.devnull, "--wrap", "sleep %d" % seconds],
                                env=self.env, check=True, capture_output=True, text=True, timeout=30).stdout.strip()
        job_id = answer.split(";")[0]
        self._wait(lambda: bool({"ALLOCATED", "MIXED"} & set(self.node(node)["words"])), "node %s allocated" % node)
        return job_id

    def cancel(self, job_id: str) -> None:
        subprocess.run(["scancel", job_id], env=self.env, check=True, capture_output=True, text=True, timeout=30)

    def node(self, name: str) -> Dict[str, object]:
        """name -> {drained, reason, state words} as sinfo --json shows it now."""
        for entry in self.sinfo()["nodes"]:
            if entry["name"] == name:
                words = _words(entry)
                return {"drained": bool(words & {"DRAIN", "DRAINED", "DRAINING"}), "reason": entry.get("reason") or "",
                        "words": sorted(words)}
        raise KeyError(name)


def _stop_with_parent() -> None:
    set_parent_death_signal(signal.SIGTERM)


def _words(entry: Mapping[str, object]) -> set:
    words = set()
    for key in ("state", "state_flags"):
        value = entry.get(key)
        if isinstance(value, str):
            words |= {word.upper() for word in value.replace("+", " ").split()}
        elif isinstance(value, list):
            words |= {str(word).upper() for word in value}
    return words
