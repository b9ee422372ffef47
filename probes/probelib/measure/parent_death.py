"""A worker process that dies with the probe that started it."""
from __future__ import annotations

import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """PR_SET_PDEATHSIG(SIGKILL): the kernel kills this worker when the probe dies, even by SIGKILL."""
    try:
        import ctypes  # pylint: disable=import-outside-toplevel

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:  # the probe was gone before prctl took effect
        os._exit(3)  # pylint: disable=protected-access
