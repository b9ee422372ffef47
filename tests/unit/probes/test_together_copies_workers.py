"""The together workers of membw and hostbw called directly on the CPU path (the runner calls them the same way in each
worker process), their references from the alone phase, and which GPUs share a PCIe uplink read from sysfs trees."""
import pytest

from fabric_trees import BRIDGE_CLASS, GPU_CLASS, H200, NVIDIA, SysTree, hgx_h200, one_gpu_vm
from probe_packages.hostbw import together as hostbw_together
from probe_packages.hostbw.plan import make_plan
from probe_packages.hostbw.uplinks import NO_BRIDGE, pcie_path, sharing, uplink_bridge
from probe_packages.membw import together as membw_together
from probe_packages.membw.plan import MIB, resolve_plan
from probelib.measure.together_outcome import run_phase, with_together, worker_errors
from probelib.params import probe_defaults

torch = pytest.importorskip("torch")

CPU = {"kind": "cpu", "index": 0, "torch_device": "cpu", "name": "test CPU", "uuid": {"unavailable": "a CPU has no UUID"},
       "memory_total_mib": 1024, "compute_capability": {"unavailable": "not a GPU"}}


def cpu_worker(index, on_device=2):
    return {"worker": index, "kind": "cpu", "device_index": 0, "slot": index, "workers_on_device": on_device}


PLACE_CPU = {"index": 0, "pci_bus_id": {"unavailable": "no GPU"}, "pcie_path": {"unavailable": "no GPU"},
             "uplink_bridge": {"unavailable": "no GPU"}, "cpus": None, "note": "no GPU: nothing to be local to"}


class StartLine:
    """The runner's start(): counts its calls and what the worker had done by then."""

    def __init__(self, probe=lambda: None):
        self.calls, self.seen, self.probe = 0, [], probe

    def __call__(self):
        self.calls += 1
        self.seen.append(self.probe())
        return 0.3


def test_the_largest_size_of_the_plan_that_fits_a_share_is_taken():
    assert membw_together.largest_fitting([4, 16, 64], 200 * MIB, 16, 5) == (64, "")
    size, why = membw_together.largest_fitting([4, 16, 64], 100 * MIB, 16, 5)
    assert size == 16 and why.startswith("two buffers of 64 MiB (128 MiB) plus a safety margin of 16 MiB exceed the 100 MiB free")
    assert membw_together.largest_fitting([4, 16], 8 * MIB, 16, 5)[0] is None


def test_a_membw_worker_times_the_headline_repeats_after_the_start_line(monkeypatch):
    plan = resolve_plan(dict(probe_defaults("membw"), sizes_mib=[1, 4], target_point_ms=5.0), "cpu")
    seen = {}
    real = membw_together.timed_repeats

    def timed_repeats(*args, **kwargs):
        seen["started_before"] = start.calls
        return real(*args, **kwargs)

    monkeypatch.setattr(membw_together, "timed_repeats", timed_repeats)
    start = StartLine()
    result = membw_together.copy_worker(CPU, cpu_worker(1), {"plan": plan}, start)
    assert start.calls == 1 and seen["started_before"] == 1
    assert result["buffer_mib"] == 4 and result["copy_verified"] is True and len(result["repeats_gbps"]) == plan["repeats"]
    assert result["device"] == {key: CPU[key] for key in ("kind", "index", "name", "uuid")}
    assert min(result["repeats_gbps"]) <= result["bandwidth_gbps"] <= max(result["repeats_gbps"])
    assert result["share_bytes"] == result["free_bytes_at_start"] // 2
    assert result["bandwidth_gbps"] == pytest.approx(2 * 4 * MIB / sorted(result["times_per_copy_s"])[1] / 1e9, rel=1e-3)


def test_a_membw_worker_whose_share_fits_no_size_fails_before_the_start_line(monkeypatch):
    plan = resolve_plan(dict(probe_defaults("membw"), sizes_mib=[1, 4]), "cpu")
    monkeypatch.setattr(membw_together, "free_memory_bytes", lambda torch, device: 2 * 1024 * MIB)
    start = StartLine()
    with pytest.raises(MemoryError, match="no size of the plan fits this worker's share of 512 MiB"):
        membw_together.copy_worker(CPU, cpu_worker(0, on_device=4), {"plan": plan}, start)
    assert start.calls == 0


def test_the_membw_reference_is_the_alone_headline_repeats_and_says_why_when_there_are_none():
    repeats = {"size_mib": 4096, "median_gbps": 4278.89, "bandwidths_gbps": [4270.0, 4278.89, 4280.0], "cv_pct": 0.12}
    entry = {"device": {"kind": "cuda", "index": 0}, "repeats": repeats}
    reference = membw_together.headline_reference(entry)
    assert reference == {"device_index": 0, "buffer_mib": 4096, "bandwidth_gbps": 4278.89, "repeats_gbps": [4270.0, 4278.89, 4280.0],
                         "cv_pct": 0.12, "source": membw_together.ALONE_SOURCE}
    workers = [{"status": "ok", "result": {"buffer_mib": 4096}}, {"status": "ok", "result": {"buffer_mib": 1024}},
               {"status": "error", "error": "x"}]
    assert membw_together.sizes_without_reference(reference, workers) == [1024]
    failed = dict(entry, repeats={"unavailable": "the repeats failed: RuntimeError: boom"})
    assert membw_together.headline_reference(failed) == {
        "unavailable": "no alone reference on cuda:0: the repeats failed: RuntimeError: boom"}


def test_a_hostbw_worker_on_the_cpu_path_times_the_host_copy_after_the_start_line():
    plan = make_plan("cpu", dict(probe_defaults("hostbw"), cpu_buffer_mib=8))
    uplink = {"uplink_sharers": 2, "uplink_bridge": {"unavailable": "no GPU"}, "uplink_gpus": [0]}
    start = StartLine()
    result = hostbw_together.copy_worker(CPU, cpu_worker(1), {"plan": plan, "check_elements": 64, "workers": 2,
                                                              "places": {"0": PLACE_CPU}, "uplinks": {"1": uplink}}, start)
    assert start.calls == 1
    assert result["h2h_gbps"] > 0 and result["h2h"]["data_check"]["ok"] is True and result["size_mib"] == 8
    assert result["h2d_pinned_gbps"] == {"unavailable": hostbw_together.NO_GPU} == result["d2h_pinned_gbps"]
    assert {key: result[key] for key in uplink} == uplink
    assert result["device"] == {"kind": "cpu", "index": 0, "name": "test CPU", "uuid": {"unavailable": "a CPU has no UUID"}}
    assert result["place"] == {"pci_bus_id": {"unavailable": "no GPU"}, "pcie_path": {"unavailable": "no GPU"}}


def test_the_hostbw_reference_is_the_first_alone_gpus_pinned_rates():
    entry = {"kind": "cuda", "index": 0, "buffer": {"used_mib": 1024}, "results": [
        {"direction": "h2d", "host_memory": "pinned", "median_gbps": 55.4},
        {"direction": "d2h", "host_memory": "pageable", "median_gbps": 16.0},
        {"direction": "d2h", "host_memory": "pinned", "error": "RuntimeError: pinning refused"}]}
    assert hostbw_together.alone_reference(entry) == {
        "device_index": 0, "size_mib": 1024, "h2d_pinned_gbps": 55.4,
        "d2h_pinned_gbps": {"unavailable": "the alone phase's pinned d2h failed"}}
    assert hostbw_together.alone_reference({"kind": "cuda", "index": 0, "error": "RuntimeError: x"}) == {
        "unavailable": "no alone reference: the alone phase measured nothing: RuntimeError: x"}


def test_a_data_check_that_failed_in_a_worker_is_an_error_of_the_probe():
    record = {"workers": [{"worker": 1, "kind": "cuda", "device_index": 0, "status": "ok", "result": {
        "h2d": {"data_check": {"checked_elements": 4096, "mismatched_elements": 3, "ok": False}},
        "d2h": {"data_check": {"checked_elements": 4096, "mismatched_elements": 0, "ok": True}}}}]}
    assert hostbw_together.data_check_errors(record) == [
        {"device": "cuda:0", "error": "together worker 1: h2d data check failed: 3 of 4096 sampled elements differ"}]


def two_gpus_behind_one_switch(folder):
    """Two GPUs below one PCIe switch (one root port), a third on its own root port."""
    tree = SysTree(folder)
    root = tree.bridge(None, "0000:15:01.0", 0)
    upstream = tree.bridge(root, "0000:16:00.0", 0)
    for number, bus in enumerate((0x18, 0x19)):
        port = tree.bridge(upstream, "0000:17:%02x.0" % number, 0)
        tree.function(port, "0000:%02x:00.0" % bus, NVIDIA, H200, GPU_CLASS, 0, "nvidia")
    alone = tree.function(None, "0000:97:01.0", "0x8086", "0x352a", BRIDGE_CLASS, 1, "pcieport")
    tree.function(alone, "0000:98:00.0", NVIDIA, H200, GPU_CLASS, 1, "nvidia")
    return tree


def workers_on(devices, per_gpu=1):
    return [{"worker": index * per_gpu + slot, "device_index": device, "workers_on_device": per_gpu}
            for index, device in enumerate(devices) for slot in range(per_gpu)]


def test_gpus_below_one_root_port_share_its_uplink(tmp_path):
    tree = two_gpus_behind_one_switch(tmp_path)
    paths = {index: pcie_path(bus, tree.sys) for index, bus in enumerate(("0000:18:00.0", "0000:19:00.0", "0000:98:00.0"))}
    assert paths[0] == ["0000:15:01.0", "0000:16:00.0", "0000:17:00.0"] and paths[2] == ["0000:97:01.0"]
    found = sharing(workers_on([0, 1, 2]), {index: uplink_bridge(path) for index, path in paths.items()})
    assert found[0] == found[1] == {"uplink_sharers": 2, "uplink_bridge": "0000:15:01.0", "uplink_gpus": [0, 1]}
    assert found[2] == {"uplink_sharers": 1, "uplink_bridge": "0000:97:01.0", "uplink_gpus": [2]}
    doubled = sharing(workers_on([0, 1, 2], 2), {index: uplink_bridge(path) for index, path in paths.items()})
    assert doubled[0]["uplink_sharers"] == 4 and doubled[5]["uplink_sharers"] == 2


def test_an_hgx_board_gives_each_gpu_its_own_uplink(tmp_path):
    tree = hgx_h200(tmp_path)
    bridges = {index: uplink_bridge(pcie_path("0000:%02x:00.0" % (bus + 3), tree.sys))
               for index, bus in enumerate((0x15, 0x35, 0x48, 0x5a))}
    assert [found["uplink_sharers"] for found in sharing(workers_on(range(4)), bridges).values()] == [1, 1, 1, 1]


def test_a_vm_without_bridges_counts_only_the_workers_on_the_gpu(tmp_path):
    tree = one_gpu_vm(tmp_path)
    assert pcie_path("0000:01:00.0", tree.sys) == ["0000:00:02.0"]
    flat = {0: uplink_bridge([]), 1: uplink_bridge({"unavailable": "/sys/bus/pci/devices/0000:02:00.0 does not exist"})}
    assert flat[0] == {"unavailable": NO_BRIDGE}
    found = sharing(workers_on([0, 1], 2), flat)
    assert found[0] == {"uplink_sharers": 2, "uplink_bridge": flat[0], "uplink_gpus": [0]} and found[3]["uplink_gpus"] == [1]
    assert pcie_path("0000:02:00.0", tree.sys) == {"unavailable": "%s/bus/pci/devices/0000:02:00.0 does not exist" % tree.sys}


def test_a_failed_worker_or_a_wrong_copy_makes_an_ok_probe_partial_and_is_named():
    record = {"workers": [
        {"worker": 0, "kind": "cuda", "device_index": 0, "status": "ok", "result": {"buffer_mib": 4096, "copy_verified": True}},
        {"worker": 1, "kind": "cuda", "device_index": 0, "status": "ok", "result": {"buffer_mib": 4096, "copy_verified": False}},
        {"worker": 2, "kind": "cuda", "device_index": 1, "status": "error", "error": "still running at the deadline: killed"}]}
    errors = worker_errors(record) + membw_together.copy_errors(record)
    assert errors == [{"device": "cuda:1", "error": "together worker 2: still running at the deadline: killed"},
                      {"device": "cuda:0", "error": "together worker 1: the 4096 MiB copy did not match its source"}]
    status, reason = with_together("ok", "", errors)
    assert status == "partial" and reason.startswith("the together phase failed on cuda:1: together worker 2: still running")
    assert with_together("error", "nothing measured", errors)[0] == "error"
    assert with_together("error", "cuda:0 error: boom", errors, record) == ("partial", "cuda:0 error: boom; " + reason)
    assert with_together("ok", "", worker_errors({"unavailable": "one GPU"})) == ("ok", "")


def test_a_together_phase_that_raises_keeps_the_alone_results_and_is_an_error_of_the_probe():
    def phase():
        raise OSError("No space left on device: '/tmp/gpufleet-together-x'")
    record, errors = run_phase(phase, "cuda:0")
    words = "OSError: No space left on device: '/tmp/gpufleet-together-x'"
    assert record == {"unavailable": "the together phase failed: " + words} and errors == [{"device": "cuda:0", "error": words}]
    assert with_together("ok", "", errors) == ("partial", "the together phase failed on cuda:0: " + words)
    assert run_phase(lambda: {"unavailable": "one GPU"}, "cuda:0") == ({"unavailable": "one GPU"}, [])
