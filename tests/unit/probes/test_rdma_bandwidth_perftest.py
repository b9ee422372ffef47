"""The real ib_write_bw (Debian's perftest, installed by scripts/install-system-packages) through rdma_bandwidth: its
version and CUDA capability as the tool states them, and a run on an RDMA device that this machine does not have (it
has none) recorded with perftest's own words, in bounded time, with nothing left running. Skipped only where perftest
is absent; GPUFLEET_REQUIRE_PERFTEST=1 (scripts/test, so CI) makes that a failure instead."""
import os
import re
import shutil
import subprocess
import time

import pytest

from probe_packages.fabric.perftest_pair import PairLimits
from probe_packages.fabric.rdma_bandwidth import measure_rdma_bandwidth
from required_parts import required_program  # pylint: disable=import-error

PERFTEST = shutil.which("ib_write_bw")
ABSENT = "ib_write_bw (perftest) is not installed here: apt install perftest (scripts/install-system-packages installs it)"


@pytest.fixture
def perftest():
    return required_program(PERFTEST, ABSENT, "GPUFLEET_REQUIRE_PERFTEST")


def rdma_devices_here():
    folder = "/sys/class/infiniband"
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def own_ib_write_bw_children():
    """(pid, state) of every ib_write_bw whose parent is this test process, a zombie (not reaped) included."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % entry, encoding="utf-8", errors="replace") as handle:
                stat = handle.read()
        except OSError:
            continue  # not a process, or gone meanwhile
        command, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if command == "ib_write_bw" and int(rest[1]) == os.getpid():
            found.append((int(entry), rest[0]))
    return found


def test_the_tool_as_it_states_itself(perftest):
    section = measure_rdma_bandwidth([], 0, {})
    tool = section["tool"]
    assert tool["path"] == perftest
    version = subprocess.run([perftest, "--version"], stdout=subprocess.PIPE, universal_newlines=True, check=False).stdout
    assert tool["version"] == re.search(r"Version: (\S+)", version).group(1)
    assert re.match(r"^\d+\.\d+$", tool["version"])
    help_text = subprocess.run([perftest, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               universal_newlines=True, check=False).stdout
    assert tool["cuda_capable"] is ("--use_cuda" in help_text)
    assert section["runs"] == [] and section["skipped"].startswith("no RDMA device")


def test_debians_build_has_no_cuda(perftest):
    """Debian's perftest (bookworm: 4.5+0.17-1, ib_write_bw Version: 6.06) is built without CUDA: host memory only."""
    packaged = subprocess.run(["dpkg", "-S", perftest], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, check=False).stdout
    if not packaged.startswith("perftest:"):
        pytest.skip("%s is not Debian's perftest package" % perftest)
    assert measure_rdma_bandwidth([], 0, {})["tool"]["cuda_capable"] is False


def test_a_device_that_does_not_exist_is_recorded_with_perftests_words(perftest):
    name = "mlx5_gpufleet_absent"
    assert name not in rdma_devices_here()
    devices = [{"name": name, "ports": [{"port": 1, "state": "ACTIVE", "link_layer": "InfiniBand"}]}]
    started = time.monotonic()
    section = measure_rdma_bandwidth(devices, 1, {"rdma_bandwidth_duration_s": 2},
                                     limits=PairLimits(listen_s=10.0, run_margin_s=10.0))
    elapsed = time.monotonic() - started
    runs = section["runs"]
    assert [(run["rdma_device"], run["port"], run["memory"]) for run in runs] == [(name, 1, "host")]
    error = runs[0]["error"]
    assert error.startswith("the ib_write_bw server exited with status 1 before it listened: ")
    if rdma_devices_here():  # another host's devices: perftest names the missing one (ctx_find_dev)
        assert "IB device %s not found" % name in error
    else:  # no RDMA device at all, as on this machine and CI
        assert "Did not detect devices" in error
    assert error.endswith("Unable to find the Infiniband/RoCE device")
    assert "bandwidth_gbitps" not in runs[0]
    assert elapsed < 10
    assert own_ib_write_bw_children() == []
