"""The fabric probe's parts alone: each parser, each unavailable reason, the nearest-NIC ranking, the GPUDirect evidence."""
import errno
import os

import pytest

from fabric_trees import Port, SysTree, hgx_h200, write
from probe_packages.fabric import ethernet, gpudirect, infiniband, nearest_nic
from probe_packages.fabric.net_kind import ethtool_driver
from probelib.system import sysfs_field


@pytest.mark.parametrize("text,parsed", [("4: ACTIVE", (4, "ACTIVE")), ("1: DOWN", (1, "DOWN")), ("5: LinkUp", (5, "LinkUp")),
                                         ("7: Phy Test", (7, "Phy Test")), ("0: <unknown>", (0, "<unknown>"))])
def test_code_and_words(text, parsed):
    assert infiniband.code_and_words(text) == parsed


@pytest.mark.parametrize("text,gbps", [("400 Gb/sec (4X NDR)", 400.0), ("200 Gb/sec (4X HDR)", 200.0), ("2.5 Gb/sec (1X SDR)", 2.5),
                                       ("800 Gb/sec (4X XDR)", 800.0), ("56 Gb/sec (4X FDR)", 56.0)])
def test_rate(text, gbps):
    assert infiniband.rate_gbitps(text) == gbps


@pytest.mark.parametrize("parse,text", [(infiniband.code_and_words, "ACTIVE"), (infiniband.rate_gbitps, "fast"),
                                        (infiniband.lid, "12"), (ethernet.carrier, "2"), (ethernet.speed_mbps, "-1"),
                                        (sysfs_field.whole_number, "1.5")])
def test_parsers_refuse_what_the_kernel_does_not_print(parse, text):
    with pytest.raises(ValueError):
        parse(text)


def port_dir(tree, device="mlx5_0"):
    return os.path.join(tree.sys, "class", "infiniband", device, "ports", "1")


def test_unreadable_port_files_say_which_and_why(tmp_path):
    tree = hgx_h200(tmp_path)
    directory = port_dir(tree)
    real = os.path.realpath(directory)
    write(os.path.join(real, "state"), "ACTIVE")
    os.remove(os.path.join(real, "counters", "VL15_dropped"))
    os.remove(os.path.join(real, "rate"))
    for name in os.listdir(os.path.join(real, "gids")):
        os.remove(os.path.join(real, "gids", name))
    os.rmdir(os.path.join(real, "gids"))
    port = infiniband.read_port(directory)
    assert port["state"] == port["state_code"] == {"unavailable": "%s reads 'ACTIVE': not '<code>: <words>'" % os.path.join(directory, "state")}
    missing_rate = "%s is missing (this kernel or driver does not offer it)" % os.path.join(directory, "rate")
    assert port["rate_gbitps"] == port["rate_text"] == {"unavailable": missing_rate}
    assert port["gid_count"] == {"unavailable": "%s is missing (the driver offers no GID table)" % os.path.join(directory, "gids")}
    assert port["counters"]["VL15_dropped"] == {"unavailable": "%s is missing (the driver offers no PMA counters for this port)"
                                                % os.path.join(directory, "counters/VL15_dropped")}
    assert port["counters"]["symbol_error"] == 0


def test_a_read_the_kernel_refuses_says_what_it_means(tmp_path, monkeypatch):
    """carrier of an interface that is administratively down and rate of a port without a valid speed raise EINVAL."""
    tree = hgx_h200(tmp_path)
    real_read = sysfs_field.read_text

    def refusing(path, limit):
        if path.endswith(("/carrier", "/rate")):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_read(path, limit)
    monkeypatch.setattr(sysfs_field, "read_text", refusing)
    interfaces = {entry["name"]: entry for entry in ethernet.read_interfaces(tree.sys, {}, lambda name: None)}
    carrier_path = os.path.join(tree.sys, "class", "net", "docker0", "carrier")
    assert interfaces["docker0"]["carrier"] == {"unavailable": "%s: the kernel refuses the read (EINVAL): the interface is "
                                                               "administratively down, and then the kernel says nothing of its "
                                                               "carrier" % carrier_path}
    port = infiniband.read_port(port_dir(tree))
    assert port["rate_gbitps"]["unavailable"].endswith("the kernel refuses the read (EINVAL): the port reports no valid speed or "
                                                       "width (a port whose link is not up)")


def test_a_file_this_user_cannot_read(tmp_path, monkeypatch):
    def denied(path, limit):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(sysfs_field, "read_text", denied)
    assert sysfs_field.read_value("/sys/x", int) == {"unavailable": "/sys/x is not readable by this user"}


def test_an_rdma_device_with_no_pci_function(tmp_path):
    tree = SysTree(tmp_path)
    entry = os.path.join(tree.sys, "devices", "virtual", "infiniband", "rxe0")
    for name, value in (("node_type", "1: CA"), ("fw_ver", "0.0.0"), ("node_guid", "0000:0000:0000:0000"),
                        ("sys_image_guid", "0000:0000:0000:0000")):
        write(os.path.join(entry, name), value)
    tree.port(os.path.join(entry, "ports", "1"), Port(link_layer="Ethernet", rate="10 Gb/sec (1X QDR)"), "0000:0000:0000:0001")
    os.makedirs(os.path.join(tree.sys, "class", "infiniband"))
    os.symlink(entry, os.path.join(tree.sys, "class", "infiniband", "rxe0"))
    (device,) = infiniband.read_rdma_devices(tree.sys)
    assert device["pci_address"] == device["numa_node"] == device["pcie_path"] == {"unavailable": "the device has no PCI function in sysfs"}
    assert device["driver"]["unavailable"].startswith(os.path.join(tree.sys, "class", "infiniband", "rxe0", "device", "driver") + ": no driver link")
    assert device["hca_type"]["unavailable"].endswith("hca_type is missing (this kernel or driver does not offer it)")
    assert device["netdevs"] == [] and device["ports"][0]["rate_gbitps"] == 10.0


def nic(name, path, node):
    return {"name": name, "pci_address": "0000:%s:00.0" % name[-2:], "pcie_path": path, "numa_node": node}


GPU = {"pci_address": "0000:18:00.0", "pcie_path": ["0000:15:01.0", "0000:16:00.0", "0000:17:00.0"], "numa_node": 0}


@pytest.mark.parametrize("devices,expected", [
    ([nic("mlx5_10", ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"], 0), nic("mlx5_11", ["0000:15:01.0", "0000:19:00.0"], 0)],
     ("mlx5_10", "same_pcie_switch")),
    ([nic("mlx5_11", ["0000:15:01.0", "0000:19:00.0"], 0), nic("mlx5_12", ["0000:35:01.0"], 0)], ("mlx5_11", "same_root_port")),
    ([nic("mlx5_13", ["0000:95:01.0"], 1), nic("mlx5_12", ["0000:35:01.0"], 0)], ("mlx5_12", "same_numa_node")),
    ([nic("mlx5_14", ["0000:95:01.0"], 1), nic("mlx5_13", ["0000:b5:01.0"], 1)], ("mlx5_13", "other_numa_node")),
])
def test_nearest_nic_ranks_switch_root_port_numa(devices, expected):
    chosen = nearest_nic.nearest_nic(GPU, devices)
    assert (chosen["rdma_device"], chosen["relation"]) == expected


def test_nearest_nic_claims_nothing_without_a_numa_node():
    far = nic("mlx5_15", ["0000:95:01.0"], {"unavailable": "no NUMA"})
    assert nearest_nic.nearest_nic(GPU, [far])["unavailable"].startswith("no RDMA device shares a root port with this GPU")
    assert nearest_nic.nearest_nic(GPU, {"unavailable": "boom"}) == {"unavailable": "the RDMA devices could not be read: boom"}


def test_peermem_from_proc_modules_alone(tmp_path):
    tree = SysTree(tmp_path)
    write(os.path.join(tree.proc, "modules"), "nvidia_peermem 16384 0 - Live 0x0\nnvidia 1 1 nvidia_peermem, Live 0x0")
    loaded, words = gpudirect.peermem(tree.proc, tree.sys)
    assert loaded is True and words == "%s lists nvidia_peermem: the module is loaded" % os.path.join(tree.proc, "modules")


def test_open_module_from_the_taint_when_proc_says_nothing(tmp_path):
    tree = SysTree(tmp_path)
    tree.nvidia_driver(open_module=False)
    os.remove(os.path.join(tree.proc, "driver", "nvidia", "version"))
    is_open, words = gpudirect.open_kernel_module(tree.proc, tree.sys)
    assert is_open is False and "reads 'POE' (P: a proprietary module" in words


def test_dmabuf_on_an_old_kernel_and_without_the_nvidia_module(tmp_path):
    tree = SysTree(tmp_path)
    write(os.path.join(tree.proc, "sys", "kernel", "osrelease"), "5.4.0-150-generic")
    dmabuf = gpudirect.dmabuf(tree.proc, tree.sys)
    assert dmabuf["kernel_supports"] is False and dmabuf["open_kernel_module"]["unavailable"].endswith("no nvidia kernel module is loaded")
    assert "kernel 5.4.0-150-generic is older than Linux 5.12" in dmabuf["reason"]
    assert dmabuf["reason"].endswith("the dma-buf path is not available (whether CUDA and the RDMA stack use it shows only at run time)")
    os.remove(os.path.join(tree.proc, "sys", "kernel", "osrelease"))
    dmabuf = gpudirect.dmabuf(tree.proc, tree.sys)
    assert dmabuf["kernel_supports"]["unavailable"].startswith("the kernel release is unknown: ")
    assert "whether the dma-buf path is available cannot be told" in dmabuf["reason"]


def test_ethtool_driver_of_no_interface_is_none():
    assert ethtool_driver("gfnoiface0") is None
