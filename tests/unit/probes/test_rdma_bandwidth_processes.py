"""The server and client of a run are real processes here (fake_ib_write_bw_script.py: a TCP server and client that
print perftest's output): the client starts once the kernel lists the server's port, every wait is bounded, and both
processes are killed and reaped on every path out, an exception included (a pid that is gone is neither running nor
a zombie)."""
import os
import subprocess
import sys
import time

import perftest_outputs as outputs
import pytest
from fake_perftest import answers

from probe_packages.fabric.perftest_pair import PairLimits, free_tcp_port, run_pair, tcp_port_listening
from probe_packages.fabric.rdma_bandwidth import measure_rdma_bandwidth

HERE = os.path.dirname(os.path.abspath(__file__))
LIMITS = PairLimits(listen_s=1.0, run_margin_s=1.5, server_exit_s=0.5, reap_s=5.0, poll_s=0.02)
DEVICES = [{"name": "mlx5_0", "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand"}]}]


@pytest.fixture
def tool(tmp_path, monkeypatch):
    path = tmp_path / "ib_write_bw"
    with open(os.path.join(HERE, "fake_ib_write_bw_script.py"), encoding="utf-8") as source:
        path.write_text("#!%s\n%s" % (sys.executable, source.read()))
    path.chmod(0o755)
    (tmp_path / "stdout.txt").write_text(outputs.HOST_CLIENT)
    monkeypatch.setenv("FAKE_IB_WRITE_BW_PIDS", str(tmp_path / "pids"))
    monkeypatch.setenv("FAKE_IB_WRITE_BW_STDOUT", str(tmp_path / "stdout.txt"))
    return path


def started_pids(tool):
    pids = tool.parent / "pids"
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def measure(tool, mode, monkeypatch):
    monkeypatch.setenv("FAKE_IB_WRITE_BW", mode)
    started = time.monotonic()
    section = measure_rdma_bandwidth(DEVICES, 0, {"rdma_bandwidth_duration_s": 1}, which=lambda name: str(tool),
                                     run=answers(), limits=LIMITS)
    return section["runs"][0], time.monotonic() - started


def test_a_run_that_goes_well(tool, monkeypatch):
    run, elapsed = measure(tool, "ok", monkeypatch)
    assert run["bandwidth_gbitps"] == 370.71, run
    assert len(started_pids(tool)) == 2 and all(gone(pid) for pid in started_pids(tool))


def test_a_server_that_never_listens_is_killed(tool, monkeypatch):
    run, elapsed = measure(tool, "server_never_listens", monkeypatch)
    assert run["error"] == ("timed out: the ib_write_bw server did not listen on its TCP port within 1 s (killed): it "
                            "printed nothing")
    assert elapsed < 10
    assert len(started_pids(tool)) == 1 and all(gone(pid) for pid in started_pids(tool))


def test_a_client_that_hangs_is_killed_with_the_server(tool, monkeypatch):
    run, elapsed = measure(tool, "client_hangs", monkeypatch)
    assert run["error"] == ("timed out: the ib_write_bw client was still running after 2.5 s (the run lasts 1 s); both "
                            "killed: it printed nothing")
    assert elapsed < 12
    assert len(started_pids(tool)) == 2 and all(gone(pid) for pid in started_pids(tool))


def test_a_server_that_hangs_after_the_run_is_killed_and_the_measurement_kept(tool, monkeypatch):
    run, elapsed = measure(tool, "server_hangs_after_the_run", monkeypatch)
    assert run["bandwidth_gbitps"] == 370.71
    assert elapsed < 10
    assert len(started_pids(tool)) == 2 and all(gone(pid) for pid in started_pids(tool))


def test_an_exception_while_waiting_still_kills_and_reaps(tool, monkeypatch):
    monkeypatch.setenv("FAKE_IB_WRITE_BW", "server_never_listens")
    processes = []

    def popen(argv, **kwargs):
        processes.append(subprocess.Popen(argv, **kwargs))
        return processes[-1]

    def listening():
        if processes and started_pids(tool):
            raise KeyboardInterrupt
        return False

    argv = [str(tool), "-p", str(free_tcp_port())]
    with pytest.raises(KeyboardInterrupt):
        run_pair(argv, argv + ["127.0.0.1"], listening, 1, LIMITS, popen=popen)
    assert len(processes) == 1 and processes[0].returncode == -9
    assert all(gone(pid) for pid in started_pids(tool))


def test_a_tool_that_cannot_be_started(tmp_path):
    argv = [str(tmp_path / "missing"), "-p", "1"]
    outcome = run_pair(argv, argv + ["127.0.0.1"], lambda: False, 1, LIMITS)
    assert outcome.error == "the ib_write_bw server could not be started: No such file or directory"


def test_the_kernels_listening_table_is_read(tmp_path):
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("", 0))
        port = server.getsockname()[1]
        assert not tcp_port_listening("/proc", port)
        server.listen(1)
        assert tcp_port_listening("/proc", port)
    assert not tcp_port_listening(str(tmp_path), port)
