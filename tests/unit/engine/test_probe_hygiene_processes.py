"""Probes leave nothing running: a daemon that left the probe's process group (double fork, setsid) is found through
the engine's child subreaper, killed when the probe ends, and named in the envelope."""
import os
import signal
import sys
import time

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils import probe_process
from ansible_collections.gpufleet.validation.plugins.module_utils.process_tree import child_subreaper
from test_probe_failure_modes import _alive, run_fake  # pylint: disable=import-error

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child subreaper is Linux's (prctl)")


def _wait_gone(pid, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@LINUX_ONLY
def test_a_setsid_daemon_left_by_a_probe_is_killed_and_named(tmp_path):
    pidfile = tmp_path / "daemon.pid"
    was_subreaper = child_subreaper()
    outcome, envelope, unused_raw = run_fake(tmp_path, "daemonizes.py", params={"pidfile": str(pidfile)})
    daemon, daemon_session, probe = (int(word) for word in pidfile.read_text().split())
    try:
        assert daemon_session not in (probe, os.getsid(0)), "the daemon did not leave the probe's session"
        assert _wait_gone(daemon), "the probe's setsid daemon survived the run"
        assert envelope["status"] == "ok", envelope["reason"]
        assert outcome.stragglers == [(daemon, "sleep")]
        assert "the probe left processes running after it ended; they were killed: pid %d (sleep)" % daemon in (
            envelope["notes"])
        assert child_subreaper() == was_subreaper  # the engine is a subreaper only while a probe runs
    finally:
        if _alive(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_without_a_subreaper_the_envelope_says_a_daemon_may_survive(tmp_path, monkeypatch):
    """Elsewhere than Linux (no prctl), only the process group is killed, and the envelope says so."""
    monkeypatch.setattr(probe_process, "child_subreaper", lambda: None)
    monkeypatch.setattr(probe_process, "set_child_subreaper", lambda enabled: False)
    pidfile = tmp_path / "daemon.pid"
    outcome, envelope, unused_raw = run_fake(tmp_path, "daemonizes.py", params={"pidfile": str(pidfile)})
    daemon = int(pidfile.read_text().split()[0])
    try:
        assert not outcome.descendants_tracked
        assert envelope["status"] == "ok"
        expected = ("cannot make the engine a child subreaper (Linux only), so only the probe's process group was "
                    "killed: a process it moved out of that group (setsid) may still run")
        assert any(expected in note for note in envelope["notes"]), envelope["notes"]
    finally:
        if _alive(daemon):
            os.kill(daemon, signal.SIGKILL)
