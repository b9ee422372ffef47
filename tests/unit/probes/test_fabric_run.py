"""The fabric probe end to end on recorded sysfs trees (tests/unit/probes/fabric_trees.py), every result valid against
schemas/fabric.schema.json, and a real run on this machine."""
import json
import os
import sys
import time

import jsonschema
import pytest

import fabric
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from fabric_trees import COUNTERS, HDR, NDR, Port, hgx_h200, one_gpu_vm, roce_host
from probe_runs import ROOT, assert_schema_header, run_probe, validate_envelope
from probelib.runner import build_envelope

DRIVERS = {"veth1a2b3c": "veth", "docker0": "bridge", "bond0": "bonding", "bond0.100": "802.1Q VLAN Support", "tun0": "tun"}
NO_PERFTEST = {"tool": {"unavailable": "ib_write_bw (perftest) is not installed"}, "runs": [], "skipped": None}
RDMA_BANDWIDTH_MODULE = os.path.join(ROOT, "probes", "probe_packages", "fabric", "rdma_bandwidth.py")


class FakeMeasure:
    """Stands for probe_packages.fabric.rdma_bandwidth.measure_rdma_bandwidth (Contract 2); records each call."""

    def __init__(self, result=None):
        self.calls = []
        self.result = result or NO_PERFTEST

    def __call__(self, rdma_devices, gpu_count, params, nearest_gpu=None, roots=None):
        self.calls.append((rdma_devices, gpu_count, params, nearest_gpu, roots))
        return self.result


def nearest_by_name(gpus):
    """Stands for rdma_bandwidth.nearest_gpu_by_device: {device: the index of the GPU that names it nearest}."""
    return {gpu["nearest_nic"]["rdma_device"]: index for index, gpu in enumerate(gpus if isinstance(gpus, list) else [])
            if "rdma_device" in gpu["nearest_nic"]}


def collect(tree, params=None, measure=None):
    return fabric.collect(params or {}, tree.roots(), DRIVERS.get, measure or FakeMeasure(), nearest_by_name)


def validate(result):
    schema_validator("fabric.schema.json").validate(result.data)
    validate_envelope(build_envelope("fabric", result, "2026-12-01T00:00:00+00:00", 0.01), "fabric")


def test_schema_header():
    assert_schema_header("fabric")


def test_hgx_h200_every_section(tmp_path):
    measure = FakeMeasure()
    result = collect(hgx_h200(tmp_path), {"rdma_bandwidth": True}, measure)
    validate(result)
    assert (result.status, result.reason, result.data["errors"]) == ("ok", "", [])
    devices = result.data["rdma_devices"]
    assert [device["name"] for device in devices] == ["mlx5_%d" % index for index in range(8)]
    assert all(len(device["ports"]) == 1 and device["ports"][0]["rate_gbitps"] == 400.0 for device in devices)
    assert [gpu["nearest_nic"]["rdma_device"] for gpu in result.data["gpus"]] == [device["name"] for device in devices]
    assert {gpu["nearest_nic"]["relation"] for gpu in result.data["gpus"]} == {"same_pcie_switch"}
    assert [gpu["numa_node"] for gpu in result.data["gpus"]] == [0, 0, 0, 0, 1, 1, 1, 1]
    (call,) = measure.calls
    assert call[0] is devices and call[1] == 8 and call[2] == {"rdma_bandwidth": True}
    assert call[3] == {"mlx5_%d" % index: index for index in range(8)} and call[4].sys.startswith(str(tmp_path))
    assert result.data["rdma_bandwidth"] == NO_PERFTEST
    assert result.data["gpudirect"]["nvidia_peermem_loaded"] is True


def test_the_first_device_field_by_field(tmp_path):
    device = collect(hgx_h200(tmp_path)).data["rdma_devices"][0]
    port = device.pop("ports")[0]
    assert device == {"name": "mlx5_0", "hca_type": "MT4129", "board_id": "MT_0000000838", "fw_ver": "28.39.1002",
                      "node_type": "CA", "node_guid": "b8ce:f603:00a1:2b30", "sys_image_guid": "b8ce:f603:00a1:2b30",
                      "pci_address": "0000:19:00.0", "numa_node": 0, "driver": "mlx5_core",
                      "pcie_path": ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"], "netdevs": ["ibp25s0"]}
    counters = port.pop("counters")
    assert port == {"port": 1, "state": "ACTIVE", "state_code": 4, "phys_state": "LinkUp", "phys_state_code": 5,
                    "rate_gbitps": 400.0, "rate_text": NDR, "link_layer": "InfiniBand", "lid": 10, "gid_count": 1}
    assert counters == {name: 0 for name in COUNTERS}


def test_every_interface_and_its_kind(tmp_path):
    interfaces = {entry["name"]: entry for entry in collect(hgx_h200(tmp_path)).data["ethernet"]}
    assert "lo" not in interfaces and len(interfaces) == 8 + 2 + 5
    assert interfaces["ens1f0np0"] == {"name": "ens1f0np0", "operstate": "up", "carrier": True, "speed_mbps": 100000,
                                       "mtu": 1500, "carrier_changes": 4, "virtual": False, "kind": "physical",
                                       "rdma_device": None, "driver": "ice", "pci_address": "0000:a1:00.0", "numa_node": 0,
                                       "pcie_path": ["0000:a0:01.1"]}
    assert interfaces["ibp25s0"]["kind"] == "ipoib" and interfaces["ibp25s0"]["rdma_device"] == "mlx5_0"
    assert interfaces["ibp25s0"] == {"name": "ibp25s0", "operstate": "up", "carrier": True, "speed_mbps": 400000, "mtu": 4092,
                                     "carrier_changes": 2, "virtual": True, "kind": "ipoib", "rdma_device": "mlx5_0",
                                     "driver": "mlx5_core", "pci_address": "0000:19:00.0", "numa_node": 0,
                                     "pcie_path": ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"]}
    assert interfaces["veth1a2b3c"] == {"name": "veth1a2b3c", "operstate": "up", "carrier": True, "speed_mbps": 10000,
                                        "mtu": 1500, "carrier_changes": 2, "virtual": True, "kind": "veth",
                                        "rdma_device": None, "driver": "veth", "pci_address": None, "numa_node": None,
                                        "pcie_path": None}
    kinds = {name: (entry["kind"], entry["driver"]) for name, entry in interfaces.items() if entry["pci_address"] is None}
    assert kinds == {"docker0": ("bridge", "bridge"), "bond0": ("bond", "bonding"), "bond0.100": ("vlan", "802.1Q VLAN Support"),
                     "tun0": ("tun", "tun"), "veth1a2b3c": ("veth", "veth")}
    assert interfaces["docker0"]["carrier"] is False and interfaces["docker0"]["operstate"] == "down"
    assert interfaces["docker0"]["speed_mbps"] == {"unavailable": "%s is missing (this kernel or driver does not offer it)"
                                                   % os.path.join(str(tmp_path), "sys", "class", "net", "docker0", "speed")}


def test_a_virtual_interface_without_a_driver_name_says_so(tmp_path):
    result = fabric.collect({}, hgx_h200(tmp_path).roots(), lambda name: None, FakeMeasure())
    validate(result)
    interfaces = {entry["name"]: entry for entry in result.data["ethernet"]}
    assert interfaces["veth1a2b3c"]["kind"] == "other-virtual"
    assert interfaces["veth1a2b3c"]["driver"] == {"unavailable": "a virtual interface has no device/driver link, and "
                                                                 "ETHTOOL_GDRVINFO named no driver for veth1a2b3c"}
    assert (interfaces["docker0"]["kind"], interfaces["bond0"]["kind"], interfaces["tun0"]["kind"]) == ("bridge", "bond", "tun")


@pytest.mark.parametrize("phys_state,phys_code", [("3: Disabled", 3), ("2: Polling", 2)])
def test_one_port_down(tmp_path, phys_state, phys_code):
    down = Port(state="1: DOWN", phys_state=phys_state, rate="10 Gb/sec (4X SDR)", lid="0xffff")
    result = collect(hgx_h200(tmp_path, ports={3: down}))
    validate(result)
    port = result.data["rdma_devices"][3]["ports"][0]
    assert (port["state"], port["state_code"], port["phys_state"], port["phys_state_code"]) == ("DOWN", 1, phys_state[3:], phys_code)
    assert port["rate_gbitps"] == 10.0 and port["rate_text"] == "10 Gb/sec (4X SDR)"
    ipoib = {entry["name"]: entry for entry in result.data["ethernet"]}["ibp94s0"]
    assert (ipoib["operstate"], ipoib["carrier"]) == ("down", False)
    assert "unavailable" in ipoib["speed_mbps"] and "-1" in ipoib["speed_mbps"]["unavailable"]
    others = [device["ports"][0]["state"] for index, device in enumerate(result.data["rdma_devices"]) if index != 3]
    assert others == ["ACTIVE"] * 7 and result.status == "ok"


def test_one_port_at_half_rate(tmp_path):
    result = collect(hgx_h200(tmp_path, ports={5: Port(rate=HDR)}))
    validate(result)
    rates = [device["ports"][0]["rate_gbitps"] for device in result.data["rdma_devices"]]
    assert rates == [400.0] * 5 + [200.0] + [400.0] * 2
    assert result.data["rdma_devices"][5]["ports"][0]["rate_text"] == "200 Gb/sec (4X HDR)"


def test_rising_symbol_errors_between_two_runs(tmp_path):
    first = collect(hgx_h200(tmp_path / "first", ports={2: Port(counters={"symbol_error": 3})}))
    second = collect(hgx_h200(tmp_path / "second", ports={2: Port(counters={"symbol_error": 412, "link_error_recovery": 2})}))
    for result in (first, second):
        validate(result)
    before = first.data["rdma_devices"][2]["ports"][0]["counters"]
    after = second.data["rdma_devices"][2]["ports"][0]["counters"]
    assert (before["symbol_error"], after["symbol_error"]) == (3, 412)
    assert (before["link_error_recovery"], after["link_error_recovery"]) == (0, 2)
    assert all(device["ports"][0]["counters"]["symbol_error"] == 0
               for index, device in enumerate(second.data["rdma_devices"]) if index != 2)


def test_a_roce_port(tmp_path):
    result = collect(roce_host(tmp_path))
    validate(result)
    (device,) = result.data["rdma_devices"]
    port = device["ports"][0]
    assert (port["link_layer"], port["lid"], port["gid_count"]) == ("Ethernet", 0, 4)
    (interface,) = result.data["ethernet"]
    assert (interface["name"], interface["kind"], interface["rdma_device"], interface["mtu"]) == ("enp25s0np0", "physical", "mlx5_0", 9000)
    assert result.data["gpus"][0]["nearest_nic"] == {"rdma_device": "mlx5_0", "pci_address": "0000:19:00.0",
                                                     "relation": "same_pcie_switch"}
    assert "::" not in json.dumps(result.data) and "0a00:0005" not in json.dumps(result.data)  # no address is recorded


def test_the_one_gpu_vm_has_no_rdma_device(tmp_path):
    measure = FakeMeasure({"tool": {"unavailable": "ib_write_bw (perftest) is not installed"}, "runs": [], "skipped": "no RDMA device"})
    tree = one_gpu_vm(tmp_path)
    result = collect(tree, {"rdma_bandwidth": False}, measure)
    validate(result)
    assert (result.status, result.data["rdma_devices"]) == ("ok", [])
    assert measure.calls == [([], 1, {"rdma_bandwidth": False}, {}, tree.roots())]
    (gpu,) = result.data["gpus"]
    assert gpu["pci_address"] == "0000:01:00.0" and gpu["pcie_path"] == ["0000:00:02.0"]
    assert gpu["numa_node"] == {"unavailable": "%s/numa_node reads '-1': the kernel names no NUMA node for this device (-1: a "
                                               "VM, a single-node host, or firmware that gives none)"
                                               % os.path.join(tree.sys, "devices", "pci0000:00", "0000:00:02.0", "0000:01:00.0")}
    assert gpu["nearest_nic"] == {"unavailable": "the host has no RDMA device (/sys/class/infiniband lists none)"}
    (eth0,) = result.data["ethernet"]
    assert (eth0["kind"], eth0["driver"], eth0["pci_address"], eth0["pcie_path"]) == ("physical", "virtio_net", "0000:00:03.0", [])
    assert "-1" in eth0["speed_mbps"]["unavailable"] and "unavailable" in eth0["numa_node"]
    gpudirect = result.data["gpudirect"]
    assert gpudirect["nvidia_peermem_loaded"] is False and "not loaded" in gpudirect["nvidia_peermem_reason"]
    assert gpudirect["dmabuf"]["kernel_supports"] is True and gpudirect["dmabuf"]["open_kernel_module"] is False
    assert gpudirect["dmabuf"]["reason"].endswith("the proprietary kernel module, which exports no GPU memory as dma-buf; the "
                                                  "dma-buf path is not available (whether CUDA and the RDMA stack use it shows "
                                                  "only at run time)")


def test_a_section_that_raises_makes_it_partial(tmp_path):
    def broken(*unused, **unused_keywords):
        raise OSError("perftest exploded")
    result = fabric.collect({}, hgx_h200(tmp_path).roots(), DRIVERS.get, broken)
    validate(result)
    assert result.status == "partial" and result.reason == "sections that failed: rdma_bandwidth (OSError: perftest exploded)"
    assert result.data["rdma_bandwidth"] == {"unavailable": "section rdma_bandwidth failed: OSError: perftest exploded"}
    assert len(result.data["rdma_devices"]) == 8


def test_nothing_read_is_an_error(tmp_path, monkeypatch):
    def broken(*unused):
        raise OSError("no /sys here")
    for name in ("read_rdma_devices", "read_interfaces", "read_gpus", "read_gpudirect"):
        monkeypatch.setattr(fabric, name, broken)
    measure = FakeMeasure()
    result = collect(hgx_h200(tmp_path), measure=measure)
    validate(result)
    assert result.status == "error" and result.reason.startswith("sections that failed: rdma_devices (OSError: no /sys here), ethernet")
    assert measure.calls[0][:2] == ({"unavailable": "section rdma_devices failed: OSError: no /sys here"}, 0)
    assert result.data["gpus"] == {"unavailable": "section gpus failed: OSError: no /sys here"}


def test_schema_rejects_garbage(tmp_path):
    data = collect(hgx_h200(tmp_path)).data
    validator = schema_validator("fabric.schema.json")
    for path, bad in ((("rdma_devices", 0, "ports", 0, "rate_gbitps"), "400"), (("ethernet", 0, "kind"), "wifi"),
                      (("gpus", 0, "nearest_nic", "relation"), "same_rack"), (("rdma_devices", 0, "pci_address"), "19:00.0"),
                      (("rdma_devices", 0, "ports", 0, "counters", "symbol_error"), -1),
                      (("gpudirect", "dmabuf", "kernel_supports"), {"unavailable": ""})):
        broken = json.loads(json.dumps(data))
        node = broken
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = bad
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(broken)
    data["rdma_devices"][0]["ports"][0]["mac"] = "b8:ce:f6:00:00:01"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)


def test_schema_takes_every_run_shape_of_contract_2(tmp_path):
    common = {"rdma_device": "mlx5_0", "port": 1, "memory": "cuda", "gpu_index": 0, "mode": "loopback", "message_bytes": 65536,
              "duration_s": 5}
    runs = [dict(common, bandwidth_gbitps=371.2, bandwidth_peak_gbitps=380.1),
            dict(common, bandwidth_gbitps=371.2, bandwidth_peak_gbitps={"unavailable": "no peak in duration mode"}),
            dict(common, error="ib_write_bw: Couldn't connect"), dict(common, port=None, not_run="the port number is not usable")]
    section = {"tool": {"path": "/usr/bin/ib_write_bw", "version": "6.22", "cuda_capable": True}, "runs": runs, "skipped": None}
    result = collect(hgx_h200(tmp_path), measure=FakeMeasure(section))
    validate(result)
    for bad in (dict(common, bandwidth_gbitps="fast"), dict(common, memory="disk", error="x"), dict(common)):
        broken = json.loads(json.dumps(result.data))
        broken["rdma_bandwidth"]["runs"] = [bad]
        with pytest.raises(jsonschema.ValidationError):
            schema_validator("fabric.schema.json").validate(broken)


def test_collect_takes_milliseconds_on_the_eight_port_tree(tmp_path):
    tree = hgx_h200(tmp_path)
    begun = time.perf_counter()
    collect(tree)
    assert time.perf_counter() - begun < 1.0  # quick runs the probe on this promise (run.py)


def test_probe_runs_here_and_matches_schema(tmp_path):
    envelope = run_probe(tmp_path, "fabric", {"rdma_bandwidth": False}, python=sys.executable)
    validate_envelope(envelope, "fabric")
    data = envelope["data"]
    assert all(isinstance(data[name], list) for name in ("rdma_devices", "ethernet", "gpus"))
    assert isinstance(data["gpudirect"]["nvidia_peermem_loaded"], bool)
    if os.path.exists(RDMA_BANDWIDTH_MODULE):
        assert envelope["status"] == "ok", envelope["reason"]
    else:  # this branch runs without rdmabw's module: the section says so, the rest is measured
        assert envelope["status"] == "partial" and envelope["reason"].startswith("sections that failed: rdma_bandwidth (ModuleNotFoundError")


def test_unknown_parameters_are_refused(tmp_path):
    envelope = run_probe(tmp_path, "fabric", {"counters": True}, python=sys.executable)
    assert envelope["status"] == "error" and "unknown parameter 'counters'" in envelope["reason"]
