"""Every module run on a host has a deadline on the controller, and an ssh connection has keepalives however it is
configured (plugins/plugin_utils/host_deadlines.py)."""
import signal
import subprocess
import time

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils import host_deadlines


class _Connection:
    transport = "ssh"

    def __init__(self, **options):
        self.options = {"ssh_args": "-C -o ControlMaster=auto -o ControlPersist=60s", "ssh_common_args": "",
                        "ssh_extra_args": ""}
        self.options.update(options)

    def get_option(self, name):
        return self.options[name]

    def set_option(self, name, value):
        self.options[name] = value


def test_a_call_that_stalls_is_abandoned_at_its_deadline_and_its_client_process_ended():
    client = subprocess.Popen(["sleep", "60"])  # as the ssh client a stalled module run waits on
    started = time.monotonic()
    with pytest.raises(host_deadlines.HostStalled) as raised:
        with host_deadlines.host_call_deadline(1, host_deadlines.STAGE_WAIT):
            client.wait()
    assert time.monotonic() - started < 5
    assert client.wait(timeout=5) == -signal.SIGKILL
    assert str(raised.value) == "no answer within 1 s while waiting for the running probe"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_call_that_answers_in_time_is_left_alone_and_an_earlier_timer_keeps_running():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *unused: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.6)
        with host_deadlines.host_call_deadline(30, host_deadlines.STAGE_START):
            time.sleep(0.1)
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.5
        time.sleep(0.8)
        assert fired == [True]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_an_ssh_connection_without_keepalives_gets_them_and_one_with_its_own_keeps_them():
    bare = _Connection(ssh_common_args="-o UserKnownHostsFile=/x")
    assert host_deadlines.ssh_keepalive_args(bare)
    assert bare.options["ssh_common_args"] == "-o UserKnownHostsFile=/x -o ServerAliveInterval=10 -o ServerAliveCountMax=3"
    own = _Connection(ssh_extra_args="-o serveraliveinterval=5")
    assert not host_deadlines.ssh_keepalive_args(own)
    assert own.options["ssh_common_args"] == ""
    paramiko = _Connection()
    paramiko.transport = "paramiko"
    assert not host_deadlines.ssh_keepalive_args(paramiko)
