"""The fabric probe on real kernel network devices: a host of the SSH test fleet (tests/fleet/netns_fleet.py, its own
network namespace behind its own sshd) runs probes/fabric.py over SSH, and records its veth interfaces as the kernel
shows them; a second veth pair, whose far end stays in the root namespace, is taken down and its MTU changed between
runs (the fleet's own eth0 carries the SSH connection, so it stays up).
"""
import json
import os
import subprocess
import sys

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FABRIC = os.path.join(ROOT, "probes", "fabric.py")
RDMA_BANDWIDTH_MODULE = os.path.join(ROOT, "probes", "probe_packages", "fabric", "rdma_bandwidth.py")
INSIDE = "fab0"
CARRIER_REFUSED = "the kernel refuses the read (EINVAL): the interface is administratively down"


def ip(*args):
    completed = subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=30, check=False)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def fabric_over_ssh(fleet, name):
    """The envelope probes/fabric.py prints on the host (the fleet's hosts share this file system and Python)."""
    argv = fleet.ssh_argv(name, sys.executable, FABRIC, "--params-json", json.dumps({"rdma_bandwidth": False}))
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stderr
    envelope = json.loads(completed.stdout)
    schema_validator("envelope.schema.json").validate(envelope)
    schema_validator("fabric.schema.json").validate(envelope["data"])
    if os.path.exists(RDMA_BANDWIDTH_MODULE):
        assert envelope["status"] == "ok", envelope["reason"]
    else:  # a branch without rdmabw's module: that section says so, the rest is measured
        assert envelope["status"] == "partial" and envelope["reason"].startswith("sections that failed: rdma_bandwidth")
    return {entry["name"]: entry for entry in envelope["data"]["ethernet"]}, envelope["data"]


def test_a_fleet_hosts_veth_interfaces_up_down_and_mtu(netns_fleet):
    fleet = netns_fleet(hosts=1)
    host = fleet.hosts[0]
    namespace, outside = host["namespace"], "%sfab" % fleet.prefix
    ip("link", "add", outside, "type", "veth", "peer", "name", INSIDE, "netns", namespace)
    try:
        ip("-n", namespace, "link", "set", "dev", INSIDE, "mtu", "9000", "up")
        ip("link", "set", "dev", outside, "mtu", "9000", "up")
        interfaces, data = fabric_over_ssh(fleet, host["name"])
        assert sorted(interfaces) == ["eth0", INSIDE]  # the namespace's own devices only, lo left out
        assert data["rdma_devices"] == [] and data["gpus"] == []
        eth0 = interfaces["eth0"]
        assert (eth0["kind"], eth0["virtual"], eth0["driver"], eth0["operstate"], eth0["carrier"], eth0["mtu"]) == (
            "veth", True, "veth", "up", True, 1500)
        assert (eth0["pci_address"], eth0["numa_node"], eth0["pcie_path"], eth0["rdma_device"]) == (None, None, None, None)
        inside = interfaces[INSIDE]
        assert (inside["kind"], inside["operstate"], inside["carrier"], inside["mtu"]) == ("veth", "up", True, 9000)
        changes_up = inside["carrier_changes"]
        assert isinstance(changes_up, int) and changes_up >= 1

        ip("link", "set", "dev", outside, "down")  # the far end down: this end keeps IFF_UP and loses its carrier
        ip("-n", namespace, "link", "set", "dev", INSIDE, "mtu", "1280")
        interfaces, unused_data = fabric_over_ssh(fleet, host["name"])
        inside = interfaces[INSIDE]
        # no carrier: the kernel's default_operstate says lowerlayerdown only when the lower device (veth's iflink: its
        # peer) is found in the same namespace and is down; the peer lives in the root namespace, so down
        assert (inside["operstate"], inside["carrier"], inside["mtu"]) == ("down", False, 1280)
        assert inside["carrier_changes"] > changes_up
        assert interfaces["eth0"]["operstate"] == "up"

        ip("-n", namespace, "link", "set", "dev", INSIDE, "down")  # this end down: the kernel then refuses carrier
        interfaces, unused_data = fabric_over_ssh(fleet, host["name"])
        inside = interfaces[INSIDE]
        assert inside["operstate"] == "down" and CARRIER_REFUSED in inside["carrier"]["unavailable"]
        assert "the kernel refuses the read (EINVAL): the interface is down" in inside["speed_mbps"]["unavailable"]
    finally:
        subprocess.run(["ip", "link", "del", outside], capture_output=True, timeout=30, check=False)
