"""fabric results in issue 34's Contract 1 shape, written by hand (the controller side's fixtures): an 8 x NDR 400 HGX
H200 node, healthy, and its faults (a port down, a port at half rate, symbol errors rising between two runs, a RoCE port
without GIDs, nvidia_peermem missing, HCA firmware differing), and the 1-GPU VM with no RDMA device.

Field names follow Contract 1 of /work/notes/layout34.md; recorded sysfs trees of the host side are fabrichost's
(tests/fixtures/sysfs/fabric/). Each builder returns a fresh envelope; edit its data for a variant.
"""
from __future__ import annotations

import copy

# The HGX H200 node's GPUs and their NICs, one per PCIe switch (DGX H100 User Guide table 6 pairs GPU n with one NIC).
GPU_ADDRESSES = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
                 "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"]
NIC_ADDRESSES = ["0000:1a:00.0", "0000:2c:00.0", "0000:3c:00.0", "0000:5f:00.0",
                 "0000:9c:00.0", "0000:ad:00.0", "0000:bc:00.0", "0000:dd:00.0"]
STARTED = "2026-12-03T10:00:00+00:00"
COUNTERS = ("symbol_error", "link_downed", "port_rcv_errors", "link_error_recovery", "port_xmit_discards",
            "port_rcv_remote_physical_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
            "port_xmit_constraint_errors", "port_rcv_constraint_errors", "VL15_dropped")


def _switch(address: str) -> str:
    return "0000:%s:00.0" % format(int(address[5:7], 16) - 1, "02x")


def ib_port(rate=400.0, rate_text="400 Gb/sec (4X NDR)", state="ACTIVE", phys_state="LinkUp", link_layer="InfiniBand", gids=1):
    codes = {"ACTIVE": 4, "DOWN": 1, "INIT": 2, "ARMED": 3}
    phys_codes = {"LinkUp": 5, "Polling": 2, "Disabled": 3, "LinkErrorRecovery": 6}
    return {"port": 1, "state": state, "state_code": codes.get(state, 0), "phys_state": phys_state,
            "phys_state_code": phys_codes.get(phys_state, 0), "rate_gbitps": rate, "rate_text": rate_text, "link_layer": link_layer,
            "lid": 12, "gid_count": gids, "counters": {name: 0 for name in COUNTERS}}


def hca(index: int, fw_ver: str = "28.39.1002") -> dict:
    address = NIC_ADDRESSES[index]
    return {"name": "mlx5_%d" % index, "hca_type": "MT4129", "board_id": "MT_0000000838", "fw_ver": fw_ver, "node_type": "CA",
            "node_guid": "a088:c203:00%02x:0001" % index, "sys_image_guid": "a088:c203:00%02x:0000" % index,
            "pci_address": address, "numa_node": 0 if index < 4 else 1, "driver": "mlx5_core",
            "pcie_path": ["0000:%s:01.0" % address[5:7], _switch(address)], "netdevs": ["ibp%ds0" % int(address[5:7], 16)],
            "ports": [ib_port()]}


def envelope(data: dict, started: str = STARTED, host: str = "hgx1", run_id: str = "20261203T100000Z-000001") -> dict:
    return {"schema_version": "1", "probe": "fabric", "host": host, "status": "ok", "started": started, "duration_s": 0.4,
            "command": ["python3", "fabric.py"], "environment": {}, "reason": "", "data": data, "run_id": run_id}


def hgx_h200_healthy() -> dict:
    """8 x ConnectX-7 at 400 Gb/s NDR InfiniBand, each on its GPU's PCIe switch; one management NIC; GPUDirect and
    ib_write_bw with host and CUDA memory."""
    devices = [hca(index) for index in range(8)]
    ethernet = [{"name": "eno1", "operstate": "up", "carrier": True, "speed_mbps": 10000, "mtu": 1500, "driver": "ixgbe",
                 "pci_address": "0000:05:00.0", "virtual": False, "kind": "physical", "numa_node": 0, "carrier_changes": 2,
                 "rdma_device": None, "pcie_path": ["0000:00:1c.0"]}]
    ethernet += [{"name": device["netdevs"][0], "operstate": "up", "carrier": True, "speed_mbps": 400000, "mtu": 4092,
                  "driver": "mlx5_core", "pci_address": device["pci_address"], "virtual": True, "kind": "ipoib",
                  "numa_node": device["numa_node"], "carrier_changes": 2, "rdma_device": device["name"],
                  "pcie_path": device["pcie_path"]} for device in devices]
    gpus = [{"pci_address": address, "numa_node": 0 if index < 4 else 1, "pcie_path": ["0000:%s:01.0" % address[5:7], _switch(address)],
             "nearest_nic": {"rdma_device": "mlx5_%d" % index, "pci_address": NIC_ADDRESSES[index], "relation": "same_pcie_switch"}}
            for index, address in enumerate(GPU_ADDRESSES)]
    runs = []
    for index in range(8):
        for memory, gpu in (("host", None), ("cuda", index)):
            runs.append({"rdma_device": "mlx5_%d" % index, "port": 1, "memory": memory, "gpu_index": gpu, "mode": "loopback",
                         "message_bytes": 65536, "duration_s": 5, "bandwidth_gbitps": 390.5 - index - (3.0 if memory == "cuda" else 0.0),
                         "bandwidth_peak_gbitps": 395.0})
    data = {"errors": [], "rdma_devices": devices, "ethernet": ethernet, "gpus": gpus,
            "gpudirect": {"nvidia_peermem_loaded": True, "nvidia_peermem_reason": "/sys/module/nvidia_peermem exists: the module is loaded",
                          "dmabuf": {"kernel_supports": True, "open_kernel_module": True,
                                     "reason": "kernel 6.8.0 is at least 5.12; /proc/driver/nvidia/version names the Open Kernel Module"}},
            "rdma_bandwidth": {"tool": {"path": "/usr/bin/ib_write_bw", "version": "6.22", "cuda_capable": True},
                               "runs": runs, "skipped": None}}
    return envelope(data)


def port(result: dict, device: str) -> dict:
    return next(entry for entry in result["data"]["rdma_devices"] if entry["name"] == device)["ports"][0]


def port_down() -> dict:
    """mlx5_3 port 1 lost its link (cable pulled: DOWN / Polling)."""
    result = hgx_h200_healthy()
    port(result, "mlx5_3").update(state="DOWN", state_code=1, phys_state="Polling", phys_state_code=2,
                                  rate_gbitps=10.0, rate_text="10 Gb/sec (4X SDR)")
    return result


def half_rate() -> dict:
    """mlx5_5 port 1 trained at half its rate (two of four lanes)."""
    result = hgx_h200_healthy()
    port(result, "mlx5_5").update(rate_gbitps=200.0, rate_text="200 Gb/sec (2X NDR)")
    return result


def symbol_errors_rising() -> tuple:
    """(the earlier run, this run two hours later): mlx5_2's symbol_error rose by 1000 (500 an hour) and its link_downed by
    1, the other ports' symbol_error by 10 (5 an hour)."""
    earlier, now = hgx_h200_healthy(), hgx_h200_healthy()
    for index in range(8):
        port(earlier, "mlx5_%d" % index)["counters"].update(symbol_error=20, link_downed=1)
        port(now, "mlx5_%d" % index)["counters"].update(symbol_error=30, link_downed=1)
    port(earlier, "mlx5_2")["counters"].update(symbol_error=100)
    port(now, "mlx5_2")["counters"].update(symbol_error=1100, link_downed=2, port_rcv_errors=7)
    now.update(started="2026-12-03T12:00:00+00:00", run_id="20261203T120000Z-000002")
    return earlier, now


def vm_without_rdma() -> dict:
    """The 1-GPU H200 VM of the rig: no /sys/class/infiniband, one virtio NIC, no NIC near the GPU."""
    data = {"errors": [], "rdma_devices": [],
            "ethernet": [{"name": "eth0", "operstate": "up", "carrier": True, "speed_mbps": {"unavailable": "speed reads -1 (virtio)"},
                          "mtu": 1500, "driver": "virtio_net", "pci_address": "0000:00:05.0", "virtual": False, "kind": "physical",
                          "numa_node": {"unavailable": "no NUMA node (-1)"}, "carrier_changes": 1, "rdma_device": None, "pcie_path": []}],
            "gpus": [{"pci_address": "0000:00:07.0", "numa_node": {"unavailable": "no NUMA node (-1)"}, "pcie_path": [],
                      "nearest_nic": {"unavailable": "no RDMA device on this host"}}],
            "gpudirect": {"nvidia_peermem_loaded": False, "nvidia_peermem_reason": "not in /proc/modules",
                          "dmabuf": {"kernel_supports": True, "open_kernel_module": True,
                                     "reason": "kernel 6.18.44 is at least 5.12; /proc/driver/nvidia/version names the Open Kernel Module"}},
            "rdma_bandwidth": {"tool": {"unavailable": "ib_write_bw (perftest) is not installed"}, "runs": [],
                               "skipped": "no RDMA device"}}
    return envelope(data, host="rig")


def roce_without_gids() -> dict:
    """The node with its NICs in Ethernet mode (RoCE); mlx5_4's netdev has no address, so its GID table is empty."""
    result = hgx_h200_healthy()
    for device in result["data"]["rdma_devices"]:
        device["ports"][0].update(link_layer="Ethernet", rate_text="400 Gb/sec (4X NDR)", lid=0, gid_count=4)
    port(result, "mlx5_4")["gid_count"] = 0
    return result


def peermem_missing() -> dict:
    result = hgx_h200_healthy()
    result["data"]["gpudirect"] = {"nvidia_peermem_loaded": False, "nvidia_peermem_reason": "not in /proc/modules nor /sys/module",
                                   "dmabuf": {"kernel_supports": True, "open_kernel_module": False,
                                              "reason": "kernel 6.8.0 is at least 5.12, but /proc/driver/nvidia/version names the proprietary module"}}
    return result


def firmware_differs() -> dict:
    result = hgx_h200_healthy()
    result["data"]["rdma_devices"][6]["fw_ver"] = "28.37.1014"
    return result


def copied(result: dict) -> dict:
    return copy.deepcopy(result)
