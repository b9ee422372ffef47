"""measure_rdma_bandwidth (contract 2): which ports and memories it runs, the argv of each run, what each gave, and
what it says when it runs nothing; the processes are stand-ins (fake_perftest.py) that print perftest's output."""
import os

import perftest_outputs as outputs
import pytest
from fake_perftest import PATH, HELP_WITHOUT_CUDA, FakePopen, answers, which_finds

from probe_packages.fabric.perftest_pair import PairLimits
from probe_packages.fabric.rdma_bandwidth import build_argv, measure_rdma_bandwidth, nearest_gpu_by_device
from probelib.system.roots import SystemRoots

FAST = PairLimits(listen_s=0.3, run_margin_s=0.3, server_exit_s=0.2, reap_s=1.0, poll_s=0.01)
RUN_KEYS = {"rdma_device", "port", "memory", "gpu_index", "mode", "message_bytes", "duration_s"}


def port(number=1, state="ACTIVE", link_layer="InfiniBand"):
    return {"port": number, "state": state, "state_code": 4, "phys_state": "LinkUp", "link_layer": link_layer}


def device(name="mlx5_0", ports=None):
    return {"name": name, "hca_type": "MT4129", "ports": ports if ports is not None else [port()]}


def host_client(argv):
    return {"exit": 0, "stdout": outputs.CUDA_CLIENT if "--use_cuda" in argv else outputs.HOST_CLIENT}


def roots(tmp_path):
    return SystemRoots(proc=str(tmp_path / "proc"), sys=str(tmp_path / "sys"))


def measure(tmp_path, devices, gpu_count=0, params=None, popen=None, run=None, which=None, nearest_gpu=None):
    popen = popen or FakePopen(str(tmp_path / "proc"), client=host_client)
    section = measure_rdma_bandwidth(devices, gpu_count, params or {}, which=which or which_finds(), run=run or answers(),
                                     popen=popen, nearest_gpu=nearest_gpu, roots=roots(tmp_path), limits=FAST)
    return section, popen


def test_one_run_per_active_port_with_host_and_cuda_memory(tmp_path):
    section, popen = measure(tmp_path, [device("mlx5_0"), device("mlx5_1")], gpu_count=8,
                             nearest_gpu={"mlx5_0": 3, "mlx5_1": 5})
    assert section["tool"] == {"path": PATH, "version": "6.06", "cuda_capable": True}
    assert section["skipped"] is None
    assert [(run["rdma_device"], run["port"], run["memory"], run["gpu_index"]) for run in section["runs"]] == [
        ("mlx5_0", 1, "host", None), ("mlx5_0", 1, "cuda", 3), ("mlx5_1", 1, "host", None), ("mlx5_1", 1, "cuda", 5)]
    host, cuda = section["runs"][:2]
    assert host == {"rdma_device": "mlx5_0", "port": 1, "memory": "host", "gpu_index": None, "mode": "loopback",
                    "message_bytes": 65536, "duration_s": 5, "bandwidth_gbitps": 370.71,
                    "bandwidth_peak_gbitps": {"unavailable": "perftest does not measure the peak in duration mode (-D sets noPeak): "
                                                             "it prints 0.00"}}
    assert cuda["bandwidth_gbitps"] == 356.84
    assert len(popen.processes) == 8


def test_argv_lists_every_option_and_value_as_its_own_word(tmp_path):
    section, popen = measure(tmp_path, [device("mlx5_0")], gpu_count=8, nearest_gpu={"mlx5_0": 3},
                             params={"rdma_bandwidth_duration_s": 7, "rdma_bandwidth_message_bytes": 1048576})
    server, client, cuda_server, cuda_client = popen.processes
    tcp_port = server.argv[server.argv.index("-p") + 1]
    assert server.argv == [PATH, "-d", "mlx5_0", "-i", "1", "-p", tcp_port, "--report_gbits", "-D", "7", "-s", "1048576",
                           "-F"]
    assert client.argv == server.argv[:6] + [client.argv[6]] + server.argv[7:] + ["127.0.0.1"]
    assert cuda_server.argv[-2:] == ["--use_cuda", "3"] and cuda_client.argv[-3:] == ["--use_cuda", "3", "127.0.0.1"]
    for process in popen.processes:
        assert process.kwargs["shell"] is False
        assert all(isinstance(word, str) and word and " " not in word for word in process.argv)
        assert process.kwargs["stdin"] is not None
    assert server.kwargs["env"] is None
    assert cuda_server.kwargs["env"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert 1 <= int(tcp_port) <= 65535
    assert [run["duration_s"] for run in section["runs"]] == [7, 7]
    assert [run["message_bytes"] for run in section["runs"]] == [1048576, 1048576]


def test_roce_port_runs_with_the_gid_index_of_its_routable_roce_v2_gid(tmp_path):
    port_dir = tmp_path / "sys" / "class" / "infiniband" / "mlx5_2" / "ports" / "1"
    table = {0: ("fe80:0000:0000:0000:0a0b:0cff:fe0d:0e0f", "IB/RoCE v1"), 1: ("fe80:0000:0000:0000:0a0b:0cff:fe0d:0e0f", "RoCE v2"),
             2: ("0000:0000:0000:0000:0000:ffff:0a01:0203", "IB/RoCE v1"), 3: ("0000:0000:0000:0000:0000:ffff:0a01:0203", "RoCE v2"),
             4: ("0000:0000:0000:0000:0000:0000:0000:0000", None)}
    (port_dir / "gids").mkdir(parents=True)
    (port_dir / "gid_attrs" / "types").mkdir(parents=True)
    for index, (gid, kind) in table.items():
        (port_dir / "gids" / str(index)).write_text(gid + "\n")
        if kind:
            (port_dir / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
    section, popen = measure(tmp_path, [device("mlx5_2", [port(1, link_layer="Ethernet")])])
    server = popen.processes[0]
    assert server.argv[-2:] == ["-x", "3"]
    assert "0a01" not in repr(section) and "10.1.2.3" not in repr(section)


def test_roce_port_without_a_roce_v2_gid_keeps_perftests_default(tmp_path):
    section, popen = measure(tmp_path, [device("mlx5_2", [port(1, link_layer="Ethernet")])])
    assert "-x" not in popen.processes[0].argv
    assert section["runs"][0]["bandwidth_gbitps"] == 370.71


def test_infiniband_port_has_no_gid_index(tmp_path):
    section, popen = measure(tmp_path, [device()])
    assert "-x" not in popen.processes[0].argv


def test_nearest_gpu_unknown_or_out_of_range_uses_gpu_0(tmp_path):
    section, popen = measure(tmp_path, [device("mlx5_0"), device("mlx5_1")], gpu_count=2, nearest_gpu={"mlx5_1": 7})
    assert [run["gpu_index"] for run in section["runs"] if run["memory"] == "cuda"] == [0, 0]


def test_not_installed(tmp_path):
    popen = FakePopen(str(tmp_path / "proc"))
    run = answers()
    section, popen = measure(tmp_path, [device()], gpu_count=8, popen=popen, run=run, which=lambda name: None)
    assert section == {"tool": {"unavailable": "ib_write_bw (perftest) is not installed: apt install perftest"}, "runs": [],
                       "skipped": "ib_write_bw (perftest) is not installed: apt install perftest: nothing measured"}
    assert popen.processes == [] and run.calls == []


def test_not_cuda_capable_runs_host_memory_only(tmp_path):
    section, popen = measure(tmp_path, [device()], gpu_count=8, run=answers(help_text=HELP_WITHOUT_CUDA))
    assert section["tool"]["cuda_capable"] is False
    assert [run["memory"] for run in section["runs"]] == ["host"]
    assert all("--use_cuda" not in process.argv for process in popen.processes)


@pytest.mark.parametrize("gpu_count, params", [(0, {}), (8, {"rdma_bandwidth_cuda": False})])
def test_no_gpu_or_cuda_off_runs_host_memory_only(tmp_path, gpu_count, params):
    section, popen = measure(tmp_path, [device()], gpu_count=gpu_count, params=params)
    assert [run["memory"] for run in section["runs"]] == ["host"]


def test_help_that_is_no_help_says_so(tmp_path):
    section, popen = measure(tmp_path, [device()], run=answers(help_text="ib_write_bw: error while loading shared libraries\n"))
    assert section["tool"]["cuda_capable"] == {"unavailable": "/usr/bin/ib_write_bw --help printed no usage text (exit "
                                                              "status 1): ib_write_bw: error while loading shared libraries"}


def test_version_query_timed_out(tmp_path):
    section, popen = measure(tmp_path, [device()], run=answers(timed_out=("--version",)))
    assert section["tool"]["version"] == {"unavailable": "/usr/bin/ib_write_bw --version did not answer within 10 s (killed)"}
    assert section["runs"][0]["bandwidth_gbitps"] == 370.71


def test_version_and_help_are_bounded_argv_runs(tmp_path):
    run = answers()
    measure(tmp_path, [], run=run)
    assert run.calls == [([PATH, "--version"], 10.0), ([PATH, "--help"], 10.0)]


def test_disabled_by_the_profile_runs_nothing(tmp_path):
    section, popen = measure(tmp_path, [device()], gpu_count=8, params={"rdma_bandwidth": False})
    assert section["skipped"] == "rdma_bandwidth disabled by the profile (parameter rdma_bandwidth: false)"
    assert section["runs"] == [] and popen.processes == []
    assert section["tool"]["version"] == "6.06"


def test_no_rdma_device(tmp_path):
    section, popen = measure(tmp_path, [], gpu_count=1)
    assert section["skipped"] == "no RDMA device (/sys/class/infiniband lists none): nothing to measure"
    assert section["runs"] == [] and popen.processes == []


def test_no_rdma_device_and_no_perftest_says_no_device_not_install_perftest(tmp_path):
    """The 1-GPU H200 rig has neither: its dossier told it to apt install perftest, which a host without an RDMA device
    does not need."""
    section, popen = measure(tmp_path, [], gpu_count=1, which=lambda name: None)
    assert section["skipped"] == "no RDMA device (/sys/class/infiniband lists none): nothing to measure"
    assert section["tool"] == {"unavailable": "ib_write_bw (perftest) is not installed: apt install perftest"}


def test_devices_that_could_not_be_read(tmp_path):
    section, popen = measure(tmp_path, {"unavailable": "/sys/class/infiniband is not readable by this user"})
    assert section["skipped"] == "the RDMA devices could not be read: /sys/class/infiniband is not readable by this user"


def test_a_port_that_is_not_active_is_not_run_and_says_so(tmp_path):
    ports = [port(1, state="DOWN"), port(2), port(3, state={"unavailable": "ports/3/state could not be read"})]
    section, popen = measure(tmp_path, [device("mlx5_0", ports)], gpu_count=1)
    down, down_cuda, active, active_cuda, unreadable, unreadable_cuda = section["runs"]
    assert down == {"rdma_device": "mlx5_0", "port": 1, "memory": "host", "gpu_index": None, "mode": "loopback",
                    "message_bytes": 65536, "duration_s": 5, "not_run": "port 1 is DOWN, not ACTIVE: not measured"}
    assert down_cuda["not_run"] == down["not_run"] and down_cuda["gpu_index"] == 0
    assert unreadable["not_run"] == "port 3 is unreadable (ports/3/state could not be read), not ACTIVE: not measured"
    assert active["bandwidth_gbitps"] == 370.71 and active_cuda["bandwidth_gbitps"] == 356.84
    assert [process.argv[process.argv.index("-i") + 1] for process in popen.processes] == ["2"] * 4


def test_a_device_name_that_could_be_an_option_is_never_run(tmp_path):
    section, popen = measure(tmp_path, [device("-x")])
    assert section["runs"][0]["not_run"] == "'-x' is not an RDMA device name: not measured"
    assert popen.processes == []


def test_a_failed_run_records_the_tools_words(tmp_path):
    popen = FakePopen(str(tmp_path / "proc"), server={"exit": 1, "stderr": outputs.DOWN_PORT_SERVER_STDERR})
    section, popen = measure(tmp_path, [device()], popen=popen)
    run = section["runs"][0]
    assert set(run) == RUN_KEYS | {"error"}
    assert run["error"] == ("the ib_write_bw server exited with status 1 before it listened: Port number 1 state is Down; "
                            "Couldn't set the link layer; Couldn't get context for the device")
    assert len(popen.processes) == 1 and popen.processes[0].reaped


def test_a_client_that_fails_records_its_words(tmp_path):
    popen = FakePopen(str(tmp_path / "proc"), server={"listen": True},
                      client={"exit": 1, "stdout": outputs.CUDA_INIT_FAILED_STDOUT})
    section, popen = measure(tmp_path, [device()], gpu_count=1, popen=popen)
    assert section["runs"][1]["error"] == "the ib_write_bw client exited with status 1: initializing CUDA; cuInit(0) returned 100"
    assert all(process.reaped for process in popen.processes)
    assert [process.killed for process in popen.processes] == [True, False, True, False]


def test_a_client_that_ends_well_without_a_bandwidth_line(tmp_path):
    popen = FakePopen(str(tmp_path / "proc"), client={"exit": 0, "stdout": outputs.test_info("mlx5_0", "IB")})
    section, popen = measure(tmp_path, [device()], popen=popen)
    assert section["runs"][0]["error"].startswith("the ib_write_bw client ended with status 0 but printed no bandwidth line")


@pytest.mark.parametrize("params, words", [
    ({"rdma_bandwidth_duration_s": 2.5}, "rdma_bandwidth_duration_s must be a whole number of seconds >= 1"),
    ({"rdma_bandwidth_duration_s": 0}, "rdma_bandwidth_duration_s must be a whole number of seconds >= 1"),
    ({"rdma_bandwidth_message_bytes": 0}, "rdma_bandwidth_message_bytes must be an integer from 1 to 2147483647"),
    ({"rdma_bandwidth_message_bytes": "64K"}, "rdma_bandwidth_message_bytes must be an integer from 1 to 2147483647"),
    ({"rdma_bandwidth": "yes"}, "rdma_bandwidth must be true or false"),
])
def test_unusable_parameters_make_the_section_unavailable(tmp_path, params, words):
    section, popen = measure(tmp_path, [device()], params=params)
    assert set(section) == {"unavailable"} and section["unavailable"].startswith("rdma_bandwidth parameters: " + words)
    assert popen.processes == []


def test_build_argv_with_gid_and_gpu():
    assert build_argv(PATH, "mlx5_3", 1, 40000, 5, 65536, 3, 2) == [
        PATH, "-d", "mlx5_3", "-i", "1", "-p", "40000", "--report_gbits", "-D", "5", "-s", "65536", "-F",
        "-x", "3", "--use_cuda", "2"]


def test_nearest_gpu_by_device_from_the_fabric_probes_gpus():
    def gpu(nic, relation):
        return {"pci_address": "0000:00:00.0", "nearest_nic": {"rdma_device": nic, "relation": relation}}
    gpus = [gpu("mlx5_0", "same_numa_node"), gpu("mlx5_0", "same_pcie_switch"), gpu("mlx5_1", "same_pcie_switch"),
            gpu("mlx5_1", "same_pcie_switch"), {"pci_address": "0000:00:00.0", "nearest_nic": {"unavailable": "no RDMA device"}}]
    assert nearest_gpu_by_device(gpus) == {"mlx5_0": 1, "mlx5_1": 2}
    assert nearest_gpu_by_device({"unavailable": "no GPU"}) == {}


def test_the_probe_library_files_are_python_3_9():
    """No 3.10+ syntax on the hosts: the files compile with feature_version 3.9."""
    import ast
    folder = os.path.join(os.path.dirname(__file__), "..", "..", "..", "probes", "probe_packages", "fabric")
    for name in ("rdma_bandwidth.py", "perftest_pair.py", "perftest_report.py", "perftest_tool.py", "roce_gid.py"):
        with open(os.path.join(folder, name), encoding="utf-8") as handle:
            ast.parse(handle.read(), name, feature_version=(3, 9))


def test_the_time_budget_ends_a_hung_run_and_starts_no_more(tmp_path):
    """Every run hangs to its limit (30 s here): the budget (3.5 s) ends the first, the others are not started, and the
    section returns in time for the rest of the probe's data."""
    import time
    popen = FakePopen(str(tmp_path / "proc"), server={"listen": True}, client={})
    started = time.monotonic()
    section = measure_rdma_bandwidth([device("mlx5_0"), device("mlx5_1")], 0, {"rdma_bandwidth_duration_s": 1},
                                     which=which_finds(), run=answers(), popen=popen, roots=roots(tmp_path),
                                     limits=PairLimits(listen_s=30, run_margin_s=30, server_exit_s=30, poll_s=0.01),
                                     budget_s=3.5)
    elapsed = time.monotonic() - started
    first, second = section["runs"]
    assert first["error"] == ("timed out: the ib_write_bw client was still running after the 3.5 s left of the "
                              "rdma_bandwidth time budget (the run lasts 1 s); both killed: it printed nothing")
    assert second["not_run"] == ("not started: 0 s of the rdma_bandwidth time budget of 3.5 s were left, less than the run "
                                 "needs (1 s and its start)")
    assert 3.4 < elapsed < 5
    assert len(popen.processes) == 2 and all(process.killed and process.reaped for process in popen.processes)
