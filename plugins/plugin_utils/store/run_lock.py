"""An exclusive lock on one of a run's records, held while it is read, acted on and written again, so that two
playbook runs acting on the same run cannot each write over what the other recorded. The lock file lives in the run's
directory under a name no host directory can take (a leading '.'), and is never opened through a link."""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from typing import Iterator

from .safe_fs import DIRECTORY_FLAGS

LOCK_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
POLL_S = 0.2


@contextlib.contextmanager
def run_lock(run_path: str, name: str, wait_s: float = 120.0) -> Iterator[None]:
    """Hold <run_path>/<name> locked; OSError naming the run when another holder keeps it past wait_s."""
    dir_fd = os.open(run_path, DIRECTORY_FLAGS)
    try:
        fd = os.open(name, LOCK_FLAGS, 0o600, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OSError("another playbook run has held %s locked for %.0f s: it is acting on this run; "
                                  "wait for it" % (os.path.join(run_path, name), wait_s)) from None
                time.sleep(POLL_S)
        yield
    finally:
        os.close(fd)
