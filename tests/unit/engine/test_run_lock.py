"""The lock that acting in Slurm holds on a run's record (plugins/plugin_utils/store/run_lock.py)."""
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_lock import run_lock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HOLDER = """
import sys, time
sys.path[:0] = [%r]
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.run_lock import run_lock
with run_lock(sys.argv[1], ".lock"):
    print("held", flush=True)
    time.sleep(30)
"""


def test_a_second_holder_waits_and_is_told_who_holds_it(tmp_path):
    collections = os.path.join(ROOT, "collections")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER % collections, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(OSError, match="another playbook run has held .*.lock locked for 1 s: it is acting on this run"):
            with run_lock(str(tmp_path), ".lock", wait_s=1.0):
                pass
        assert time.monotonic() - started >= 1.0
    finally:
        holder.kill()
        holder.wait()
    with run_lock(str(tmp_path), ".lock", wait_s=5.0):  # free again once its holder is gone
        pass


def test_the_lock_is_never_opened_through_a_link(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("x")
    os.symlink(str(target), str(tmp_path / ".lock"))
    with pytest.raises(OSError):
        with run_lock(str(tmp_path), ".lock", wait_s=0.1):
            pass
    assert target.read_text() == "x"
