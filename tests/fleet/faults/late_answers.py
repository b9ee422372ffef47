"""A stand-in for the Python Ansible runs its modules with on a host (``ansible_python_interpreter``) that answers the
probe engine's wait for a running probe late: the connection lives (ssh's keepalives are answered) but the answer comes
after the call's deadline, as on a loaded controller or host (issue 45, point 4).

With pipelining, Ansible sends the module on standard input; this reads it, and when it is the wait module
(gpufleet.validation.probe_wait) sleeps LATE_S, past the engine's deadline for a wait (its wait, at most the progress
interval, plus host_deadlines.WAIT_CALL_MARGIN_S), then runs it with the controller's Python (the fleet's hosts share
the controller's file system). ``make_interpreter(folder, mode)`` writes the executable:

    once    only the first wait is late (a marker file in the folder says it was): the engine's second asking is answered
    always  every wait is late

Standard library only; nothing here runs a shell.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

MODES = ("once", "always")
LATE_S = 80  # past 75 s: the deadline of a wait at the default 15 s progress interval (15 + 60)
WAIT_MODULE = b"probe_wait"
LATE_MARKER = "late.done"


def make_interpreter(folder, mode: str) -> str:
    """Write <folder>/<mode>, an executable whose shebang runs this file with this Python."""
    if mode not in MODES:
        raise ValueError("unknown mode %r (known: %s)" % (mode, ", ".join(MODES)))
    # imported here: the host runs this file as a script, where it is no package's module
    from .interpreter_file import write_interpreter  # pylint: disable=import-outside-toplevel
    return write_interpreter(folder, mode, __file__)


def late_waits(folder: str) -> int:
    """How many waits were answered late so far."""
    try:
        with open(os.path.join(folder, LATE_MARKER)) as handle:
            return len(handle.read().split())
    except FileNotFoundError:
        return 0


def main(argv: list) -> int:
    wrapper, module_argv = argv[1], argv[2:]
    mode, folder = os.path.basename(wrapper), os.path.dirname(os.path.abspath(wrapper))
    source = sys.stdin.buffer.read()
    if WAIT_MODULE in source and (mode == "always" or late_waits(folder) == 0):
        with open(os.path.join(folder, LATE_MARKER), "a") as handle:
            handle.write("%d\n" % os.getpid())
        time.sleep(LATE_S)
    return subprocess.run([sys.executable] + module_argv, input=source, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
