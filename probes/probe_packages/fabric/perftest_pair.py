"""One perftest loopback run: a server process, then a client process that connects to it on this host; both are argv
lists (no shell), both are bounded in time, and both are killed and reaped on every path out.

The server opens the RDMA device before it listens on its TCP port (src/write_bw.c), so a server that exits before
listening says why (e.g. " Did not detect devices"). The client is started only once the kernel lists the server's
port as listening (/proc/net/tcp): perftest's client tries to connect once and gives up ("Couldn't connect to"). Both
stay in the probe's process group, so the engine's kill of a probe that overruns reaches them too.
"""
from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Any, Callable, Dict, List, Optional, Tuple

from probe_packages.fabric.perftest_report import error_words

TCP_LISTEN = "0A"
OUTPUTS = ("server_stdout", "server_stderr", "client_stdout", "client_stderr")
OUTPUT_LIMIT_BYTES = 1 << 20


@dataclass
class PairLimits:
    """How long each step may take, in seconds. perftest's server listens right after it opens the device; the client
    runs the duration plus its own margins and a one-second sleep, and longer to create a CUDA context."""

    listen_s: float = 15.0
    run_margin_s: float = 30.0
    server_exit_s: float = 10.0
    reap_s: float = 5.0
    poll_s: float = 0.05


@dataclass
class PairOutcome:
    client_stdout: str
    server_stdout: str
    error: Optional[str]  # words when the run failed; None when the client finished with status 0


def free_tcp_port() -> int:
    """A TCP port nothing listens on now (the kernel's pick); the server binds it on every IPv4 address."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("", 0))
        return int(probe.getsockname()[1])


def tcp_port_listening(proc_root: str, port: int) -> bool:
    """Whether /proc/net/tcp or tcp6 lists a socket listening on ``port``."""
    for name in ("tcp", "tcp6"):
        try:
            with open(os.path.join(proc_root, "net", name), encoding="ascii", errors="replace") as handle:
                next(handle, None)
                for line in handle:
                    fields = line.split()
                    if len(fields) > 3 and fields[3] == TCP_LISTEN and fields[1].rsplit(":", 1)[-1] == "%04X" % port:
                        return True
        except OSError:
            continue
    return False


def run_pair(server_argv: List[str], client_argv: List[str], listening: Callable[[], bool], duration_s: float,
             limits: PairLimits, popen: Callable[..., Any] = subprocess.Popen, env: Optional[Dict[str, str]] = None,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
             budget_s: Optional[float] = None) -> PairOutcome:
    """Start the server, wait until it listens, run the client to its end, let the server end; kill what is left.
    budget_s: the most the whole run may take, whatever its steps' limits (the caller's time left)."""
    pair = _Pair(popen, env, limits, clock, sleep, budget_s)
    try:
        failure = pair.run(server_argv, client_argv, listening, duration_s)
    finally:
        said = pair.close()
    words = None
    if failure is not None:
        text, whose = failure
        words = text + (": " + error_words(said[whose + "_stderr"], said[whose + "_stdout"]) if whose else "")
    return PairOutcome(client_stdout=said["client_stdout"], server_stdout=said["server_stdout"], error=words)


class _Pair:
    """The two processes of one run and the files they print into."""

    def __init__(self, popen: Callable[..., Any], env: Optional[Dict[str, str]], limits: PairLimits,
                 clock: Callable[[], float], sleep: Callable[[float], None], budget_s: Optional[float]) -> None:
        self.popen, self.env, self.limits, self.clock, self.sleep = popen, env, limits, clock, sleep
        self.budget_s = budget_s
        self.end = None if budget_s is None else clock() + budget_s
        self.started: List[Any] = []
        self.files: Dict[str, IO[bytes]] = {}
        for name in OUTPUTS:
            self.files[name] = tempfile.TemporaryFile()

    def run(self, server_argv: List[str], client_argv: List[str], listening: Callable[[], bool],
            duration_s: float) -> Optional[Tuple[str, Optional[str]]]:
        """None when the client ended with status 0, else (the words of the failure, "server" or "client": whose
        output to quote after them once both are gone, or None)."""
        try:
            server = self._start("server", server_argv)
        except OSError as exc:
            return "the ib_write_bw server could not be started: %s" % (exc.strerror or exc), None
        deadline, by_budget = self._deadline(self.limits.listen_s)
        while not listening():
            if server.poll() is not None:
                return "the ib_write_bw server exited with status %s before it listened" % server.returncode, "server"
            if self.clock() >= deadline:
                return "timed out: the ib_write_bw server did not listen on its TCP port within %s (killed)" % (
                    self._limit_words(self.limits.listen_s, by_budget)), "server"
            self.sleep(self.limits.poll_s)
        try:
            client = self._start("client", client_argv)
        except OSError as exc:
            return "the ib_write_bw client could not be started: %s" % (exc.strerror or exc), None
        run_limit_s = duration_s + self.limits.run_margin_s
        deadline, by_budget = self._deadline(run_limit_s)
        if self._wait(client, deadline) is None:
            return ("timed out: the ib_write_bw client was still running after %s (the run lasts %g s); both killed"
                    % (self._limit_words(run_limit_s, by_budget), duration_s)), "client"
        if client.returncode != 0:
            return "the ib_write_bw client exited with status %s" % client.returncode, "client"
        self._wait(server, self._deadline(self.limits.server_exit_s)[0])
        return None

    def _deadline(self, limit_s: float) -> Tuple[float, bool]:
        """(when a step of limit_s started now must end, whether the budget ends it before its own limit)."""
        own = self.clock() + limit_s
        if self.end is not None and self.end < own:
            return self.end, True
        return own, False

    def _limit_words(self, limit_s: float, by_budget: bool) -> str:
        if by_budget:
            return "the %g s left of the rdma_bandwidth time budget" % round(self.budget_s or 0.0, 1)
        return "%g s" % limit_s

    def close(self) -> Dict[str, str]:
        """Kill and reap what still runs, then {"server_stdout", ...: what each printed}."""
        for process in self.started:
            _kill_and_reap(process, self.limits.reap_s)
        said = {}
        for name, handle in self.files.items():
            handle.seek(0)
            said[name] = handle.read(OUTPUT_LIMIT_BYTES).decode("utf-8", "replace")
            handle.close()
        return said

    def _start(self, role: str, argv: List[str]) -> Any:
        process = self.popen(argv, stdin=subprocess.DEVNULL, stdout=self.files[role + "_stdout"],
                             stderr=self.files[role + "_stderr"], env=self.env, shell=False, close_fds=True)
        self.started.append(process)
        return process

    def _wait(self, process: Any, deadline: float) -> Optional[int]:
        while True:
            code = process.poll()
            if code is not None or self.clock() >= deadline:
                return code
            self.sleep(self.limits.poll_s)


def _kill_and_reap(process: Any, reap_s: float) -> None:
    if process.poll() is None:
        try:
            process.kill()
        except OSError:
            pass  # it ended between poll and kill
    try:
        process.wait(timeout=reap_s)
    except subprocess.TimeoutExpired:
        pass  # a process in uninterruptible sleep; the engine's group kill reaps it when the probe ends
