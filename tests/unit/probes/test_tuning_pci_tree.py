"""The PCI tree above each GPU, read from fake sysfs trees laid out as the kernel lays them out."""
import os

from probe_packages.tuning.pci_config import BECOME
from probe_packages.tuning.pci_tree import config_space_section, read_pci_tree
from tuning_trees import (DOWNTRAINED_GPU, GPU_ADDRESSES, acs_on_switch_port, cpu_machine, device_dir, downstream_ports,
                          downtrained_link, gpu as fake_gpu, rtx_pro_6000_two_numa, write_file, write_host)


def by_address(tree):
    return {device["address"]: device for device in tree.devices}


def test_eight_gpus_and_every_bridge_once(tmp_path):
    tree = read_pci_tree(rtx_pro_6000_two_numa(tmp_path).sys, privileged=True)
    assert [gpu["address"] for gpu in tree.gpus] == list(GPU_ADDRESSES)
    roles = [device["role"] for device in tree.devices]
    assert (roles.count("gpu"), roles.count("bridge"), roles.count("root_port")) == (8, 12, 4)
    addresses = [device["address"] for device in tree.devices]
    assert addresses == sorted(addresses) and len(set(addresses)) == len(addresses)
    assert "0000:01:00.0" not in addresses and "0000:00:00.0" not in addresses  # the NVMe drive and the host bridge


def test_each_gpu_path_up_to_its_root_port(tmp_path):
    tree = read_pci_tree(rtx_pro_6000_two_numa(tmp_path).sys, privileged=True)
    first, last = tree.gpus[0], tree.gpus[-1]
    assert first == {"address": "0000:13:00.0", "path": ["0000:12:00.0", "0000:11:00.0", "0000:10:01.0"],
                     "root_port": "0000:10:01.0", "numa_node": 0}
    assert last["path"] == ["0000:b2:01.0", "0000:b1:00.0", "0000:b0:01.0"] and last["numa_node"] == 1
    assert [gpu["numa_node"] for gpu in tree.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    devices = by_address(tree)
    assert devices["0000:13:00.0"]["upstream"] == "0000:12:00.0"
    assert devices["0000:11:00.0"]["upstream"] == "0000:10:01.0"
    assert devices["0000:10:01.0"]["upstream"] is None and devices["0000:10:01.0"]["role"] == "root_port"


def test_the_operators_settings(tmp_path):
    devices = by_address(read_pci_tree(rtx_pro_6000_two_numa(tmp_path).sys, privileged=True))
    gpu, downstream, root_port = devices["0000:13:00.0"], devices["0000:12:00.0"], devices["0000:10:01.0"]
    assert (gpu["vendor_id"], gpu["device_id"], gpu["class"]) == ("0x10de", "0x2bb5", "0x030200")
    assert (gpu["max_payload_supported_bytes"], gpu["max_payload_bytes"], gpu["max_read_request_bytes"]) == (512, 256, 4096)
    assert root_port["max_read_request_bytes"] == 4096 and downstream["max_read_request_bytes"] == 512
    assert {device["max_payload_bytes"] for device in devices.values()} == {256}
    assert gpu["link"] == {"max_speed_gts": 32.0, "max_width": 16, "speed_gts": 32.0, "width": 16}
    assert gpu["aspm"] == {"supported": "L0s L1", "control": "disabled"}
    assert gpu["acs"]["present"] is False
    assert downstream["acs"]["present"] is True and downstream["acs"]["redirects_peer_traffic"] is False


def test_acs_redirect_on_the_switch_downstream_ports(tmp_path):
    devices = by_address(read_pci_tree(acs_on_switch_port(tmp_path).sys, privileged=True))
    redirecting = sorted(address for address, device in devices.items() if device["acs"]["redirects_peer_traffic"])
    assert redirecting == sorted(downstream_ports())
    assert devices["0000:12:00.0"]["acs"]["request_redirect"] and devices["0000:12:00.0"]["acs"]["completion_redirect"]


def test_a_downtrained_link(tmp_path):
    devices = by_address(read_pci_tree(downtrained_link(tmp_path).sys, privileged=True))
    assert devices[DOWNTRAINED_GPU]["link"] == {"max_speed_gts": 32.0, "max_width": 16, "speed_gts": 16.0, "width": 8}
    assert all(device["link"]["width"] == 16 for address, device in devices.items() if address != DOWNTRAINED_GPU)


def test_unprivileged_config_reads_keep_the_sysfs_link(tmp_path):
    tree = read_pci_tree(rtx_pro_6000_two_numa(tmp_path, privileged=False).sys, privileged=False)
    for device in tree.devices:
        for value in (device["max_payload_bytes"], device["max_read_request_bytes"], device["aspm"]["control"],
                      device["acs"]):
            assert "past the 64 bytes readable without root" in value["unavailable"]
            assert BECOME in value["unavailable"]
        assert device["link"]["speed_gts"] == 32.0 and device["link"]["width"] == 16
    section = config_space_section(tree, privileged=False)
    assert section["privileged"] is False and section["bytes_read_min"] == 64
    assert "gpufleet_become_probes: [tuning]" in section["note"]
    assert config_space_section(read_pci_tree(rtx_pro_6000_two_numa(tmp_path / "root").sys, True), True)[
        "bytes_read_min"] == 4096


def test_no_gpu_lists_nothing(tmp_path):
    tree = read_pci_tree(cpu_machine(tmp_path).sys, privileged=True)
    assert tree.devices == [] and tree.gpus == []
    assert config_space_section(tree, True)["bytes_read_min"] == {
        "unavailable": "no device listed: the PCI bus has no NVIDIA GPU"}


def test_non_numeric_and_missing_sysfs_values_are_reasons(tmp_path):
    roots = rtx_pro_6000_two_numa(tmp_path)
    gpu_dir = device_dir(roots, "0000:13:00.0")
    write_file(os.path.join(gpu_dir, "numa_node"), "-1")
    write_file(os.path.join(gpu_dir, "current_link_speed"), "Unknown")
    write_file(os.path.join(gpu_dir, "current_link_width"), "lots")
    os.unlink(os.path.join(gpu_dir, "max_link_width"))
    write_file(os.path.join(device_dir(roots, "0000:12:00.0"), "numa_node"), "zero")
    tree = read_pci_tree(roots.sys, privileged=True)
    devices = by_address(tree)
    gpu = devices["0000:13:00.0"]
    assert "names no NUMA node" in gpu["numa_node"]["unavailable"]
    assert tree.gpus[0]["numa_node"] == gpu["numa_node"]
    assert "current_link_speed reads 'Unknown'" in gpu["link"]["speed_gts"]["unavailable"]
    assert "current_link_width reads 'lots': not a lane count" in gpu["link"]["width"]["unavailable"]
    assert "max_link_width is missing" in gpu["link"]["max_width"]["unavailable"]
    assert "not a whole number" in devices["0000:12:00.0"]["numa_node"]["unavailable"]


def test_an_unreadable_config_fails_alone(tmp_path):
    roots = rtx_pro_6000_two_numa(tmp_path)
    config = os.path.join(device_dir(roots, "0000:13:00.0"), "config")
    os.unlink(config)
    os.mkdir(config)  # reading a directory fails for root too
    tree = read_pci_tree(roots.sys, privileged=True)
    gpu = by_address(tree)["0000:13:00.0"]
    assert "config could not be read" in gpu["max_payload_bytes"]["unavailable"]
    assert "config could not be read" in gpu["acs"]["unavailable"]
    assert gpu["link"]["width"] == 16
    assert config_space_section(tree, True)["bytes_read_min"] == 4096


def test_a_gpu_on_the_root_bus_has_no_root_port(tmp_path):
    """As in a VM: the GPU sits directly below the host bridge."""
    roots = write_host(tmp_path, {"pci0000:20": fake_gpu("0000:20:00.0", 0)})
    tree = read_pci_tree(roots.sys, privileged=True)
    assert tree.gpus == [{"address": "0000:20:00.0", "path": [], "root_port": None, "numa_node": 0}]
    assert [(device["role"], device["upstream"]) for device in tree.devices] == [("gpu", None)]
