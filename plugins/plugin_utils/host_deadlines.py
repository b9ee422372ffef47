"""The deadlines of every operation on a host, so that a host that stops answering costs that host, not the run.

Two layers (docs/connections.md, "Deadlines"):

- The connection notices a silent peer by itself. OpenSSH's ConnectTimeout covers the TCP connection only: a server
  that accepts and sends its banner and then nothing (a wedged sshd) holds ``ssh`` in the key exchange forever, and a
  host that stops answering mid-command holds it in the session. ServerAliveInterval x ServerAliveCountMax bounds both
  (the keepalives run from the key exchange on): ``ssh_keepalive_args`` adds them to an ssh connection that has none.
  paramiko's ``timeout`` (default 10 s) bounds its connection, banner, key exchange and login.
- Each module run on the host has a deadline of its own on the controller (``host_call_deadline``), whatever the
  connection is: past it the call is abandoned, the connection's client processes of this worker are ended, and the
  probe is stored ``unreachable`` with the stage it stalled in.
"""
from __future__ import annotations

import os
import re
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, List

from ansible_collections.gpufleet.validation.plugins.module_utils.process_tree import descendants, process_table

KEEPALIVE_INTERVAL_S = 10
KEEPALIVE_COUNT = 3
KEEPALIVE_ARGS = "-o ServerAliveInterval=%d -o ServerAliveCountMax=%d" % (KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT)
SSH_ARG_OPTIONS = ("ssh_args", "ssh_common_args", "ssh_extra_args")
# ssh takes the first value given for an option
_SERVER_ALIVE_INTERVAL = re.compile(r"serveraliveinterval[= ]+(\d+)")
_SERVER_ALIVE_COUNT = re.compile(r"serveralivecountmax[= ]+(\d+)")
# The start of a probe: connect (ConnectTimeout, 10 s by default), log in, copy and start the module, wait for its first
# seconds. Its Python search has a limit of its own, added where it runs (plugins/action/probe.py).
START_CALL_S = 120
# A wait for a running probe asks the host to answer within the seconds given; past them by this much it has stalled.
WAIT_CALL_MARGIN_S = 60

STAGE_START = "connecting to the host and starting the probe"
STAGE_WAIT = "waiting for the running probe"


class HostStalled(BaseException):
    """A module run on the host passed its deadline. A BaseException, so that no `except Exception` on the way (the
    ssh connection's retries with ansible_ssh_retries > 0) swallows it and runs the call again without a deadline."""

    def __init__(self, stage: str, seconds: float) -> None:
        super().__init__("no answer within %.0f s while %s" % (seconds, stage))
        self.stage = stage
        self.seconds = seconds


def _ssh_args(connection) -> List[str]:
    given = []
    for option in SSH_ARG_OPTIONS:
        try:
            given.append(str(connection.get_option(option) or ""))
        except KeyError:
            continue
    return given


def ssh_keepalive_args(connection) -> bool:
    """Give an ssh connection keepalives when none of its arguments sets them; True when it added them."""
    if getattr(connection, "transport", None) != "ssh":
        return False
    if any("serveraliveinterval" in text.lower() for text in _ssh_args(connection)):
        return False
    common = str(connection.get_option("ssh_common_args") or "")
    connection.set_option("ssh_common_args", (common + " " + KEEPALIVE_ARGS).strip())
    return True


def connection_notices_a_silent_peer(connection) -> bool:
    """Whether the connection ends by itself, well inside a wait call's margin, when the host stops answering: ssh whose
    keepalives give up within WAIT_CALL_MARGIN_S (ssh_keepalive_args sets 10 s x 3), or the controller's own local
    connection. A call on such a connection that passes its deadline was answered at the connection's level all along:
    the host or the controller is slow, not gone."""
    transport = getattr(connection, "transport", None)
    if transport == "local":
        return True
    if transport != "ssh":
        return False
    given = " ".join(_ssh_args(connection)).lower()
    interval = _SERVER_ALIVE_INTERVAL.findall(given)
    count = _SERVER_ALIVE_COUNT.findall(given)
    if not interval or int(interval[0]) <= 0:
        return False
    return int(interval[0]) * (int(count[0]) if count else 3) < WAIT_CALL_MARGIN_S


def controller_load_words() -> str:
    """The controller's load now, in words ("load average 14.2 on 2 cores"), for a sentence that blames slowness."""
    try:
        return "load average %.1f on %d cores" % (os.getloadavg()[0], os.cpu_count() or 1)
    except OSError:
        return "load average unknown"


@dataclass
class UnansweredWaits:
    """The waits for a running probe that passed their deadlines on a connection that lived (the host or the
    controller was slow): each is asked again, and the result says so with the measured times."""

    calls: List[str] = field(default_factory=list)

    def add(self, after_s: float, given_s: float) -> None:
        self.calls.append("%.0f s after the probe started, a call given %.0f s (controller %s)"
                          % (after_s, given_s, controller_load_words()))

    def sentence(self) -> str:
        return ("%d wait%s for the running probe went unanswered while the connection lived (its keepalives were "
                "answered), so the host or the controller was slow, not gone: %s" % (
                    len(self.calls), "" if len(self.calls) == 1 else "s", "; ".join(self.calls)))


def _end_connection_clients() -> None:
    """End this worker's descendants: the connection's clients stuck on the host (an ssh client, and a ControlPersist
    master it started while that client lives), or a local connection's module process. A worker serves one host."""
    table = process_table() or {}
    for pid in descendants(table, os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@contextmanager
def host_call_deadline(seconds: float, stage: str) -> Iterator[None]:
    """Raise HostStalled in the block when it runs past seconds (the main thread only: elsewhere the block runs
    unbounded but for the connection's own limits). A timer set before (Ansible's task timeout) keeps running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stalled(signum, frame):
        if time.monotonic() - begun < seconds and callable(previous_handler):
            previous_handler(signum, frame)  # the timer set before (Ansible's task timeout) was due first
            return
        _end_connection_clients()
        raise HostStalled(stage, seconds)

    begun = time.monotonic()
    previous_handler = signal.signal(signal.SIGALRM, stalled)
    previous_left, unused_interval = signal.setitimer(signal.ITIMER_REAL, 0)
    signal.setitimer(signal.ITIMER_REAL, seconds if not previous_left else min(seconds, previous_left))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_left:
            # The earlier timer goes on with what it had left; one already due fires at once.
            signal.setitimer(signal.ITIMER_REAL, max(0.001, previous_left - (time.monotonic() - begun)))
