"""The fabric result read once for the checks and the view: each RDMA port with its device, the board the host is.

Pure Python. Reads the fields of Contract 1 (schemas/fabric.schema.json): data.rdma_devices[].ports[], data.ethernet,
data.gpus, data.gpudirect, data.rdma_bandwidth. Any of them may be {"unavailable": why}.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ...probe_kit.kit import baseline_file, dig, is_unavailable, number_or_none, unavailable_reason

ACTIVE_STATE = "ACTIVE"
LINK_UP = "LinkUp"
# phys_state an operator sets on purpose (ibportstate disable): not a fault of the port
DISABLED_PHYS_STATE = "Disabled"
# The relations of a GPU to its nearest NIC, nearest first (Contract 1's gpus[].nearest_nic.relation).
RELATIONS = ("same_pcie_switch", "same_root_port", "same_numa_node", "other_numa_node")
RELATION_WORDS = {"same_pcie_switch": "on the GPU's PCIe switch", "same_root_port": "under the GPU's root port",
                  "same_numa_node": "on the GPU's NUMA node", "other_numa_node": "on another NUMA node"}


@dataclass(frozen=True)
class Port:
    """One port of one RDMA device: label is "mlx5_3 port 1"."""

    device: Dict[str, Any]
    port: Dict[str, Any]

    @property
    def label(self) -> str:
        return "%s port %s" % (self.device.get("name"), self.port.get("port"))

    @property
    def key(self) -> str:
        """"mlx5_3/1": how an operator names the port in a rule's ignore_ports."""
        return "%s/%s" % (self.device.get("name"), self.port.get("port"))

    def text(self, name: str) -> Optional[str]:
        value = self.port.get(name)
        return value if isinstance(value, str) else None

    @property
    def active(self) -> bool:
        return self.text("state") == ACTIVE_STATE and self.text("phys_state") == LINK_UP

    @property
    def rate_gbitps(self) -> Optional[float]:
        return number_or_none(self.port.get("rate_gbitps"))

    def rate_words(self) -> str:
        rate = self.port.get("rate_text")
        if isinstance(rate, str) and rate:
            return rate
        value = self.rate_gbitps
        return "%g Gb/s" % value if value is not None else "rate %s" % unavailable_reason(self.port.get("rate_gbitps"))

    def counter(self, name: str) -> Optional[float]:
        counters = self.port.get("counters")
        return number_or_none(counters.get(name)) if isinstance(counters, dict) else None


def listed(data: Any, key: str) -> Tuple[List[Dict[str, Any]], str]:
    """(the entries of data[key] that are objects, why the list is not there: "" when it is)."""
    value = dig(data, key)
    if is_unavailable(value):
        return [], "%s: %s" % (key, unavailable_reason(value))
    if not isinstance(value, list):
        return [], "%s not recorded" % key
    return [entry for entry in value if isinstance(entry, dict)], ""


def rdma_devices(data: Any) -> Tuple[List[Dict[str, Any]], str]:
    return listed(data, "rdma_devices")


def ports_of(data: Any) -> Tuple[List[Port], str]:
    """Every port of every RDMA device, in the probe's order; why none could be read ("" when the list was read)."""
    devices, why = rdma_devices(data)
    found = []
    for device in devices:
        ports = device.get("ports")
        for port in ports if isinstance(ports, list) else []:
            if isinstance(port, dict):
                found.append(Port(device, port))
    return found, why


def no_rdma_words(why: str) -> str:
    """Why there is no port to judge."""
    return "the RDMA devices could not be listed (%s)" % why if why else "no RDMA device on this host (/sys/class/infiniband is empty or absent)"


def ignored(rule: Dict[str, Any]) -> List[str]:
    """The ports the rule leaves out, as "mlx5_10/1" (an operator's list of unused ports)."""
    names = (rule.get("params") or {}).get("ignore_ports") or []
    return [str(name) for name in names]


def network(context: Any) -> Dict[str, Any]:
    """The SKU baseline's network block ({} when the SKU is unknown or its baseline says nothing of the network)."""
    baseline = getattr(context, "baseline", None) or {}
    block = baseline.get("network") if isinstance(baseline, dict) else None
    return block if isinstance(block, dict) else {}


def expected(context: Any, key: str) -> Tuple[Any, str]:
    """(the baseline's network.<key> value, its source in words); (None, why not) when it does not say."""
    baseline = getattr(context, "baseline", None)
    if not baseline:
        return None, "no SKU identified for this host (%s), so no baseline says what its network should be" % (
            getattr(context, "sku_reason", "") or "unknown")
    entry = network(context).get(key)
    if not isinstance(entry, dict) or "value" not in entry:
        return None, "the baseline (%s) does not say network.%s" % (baseline_file(baseline), key)
    return entry["value"], "%s network.%s (%s)" % (baseline_file(baseline), key, entry.get("source", "no source"))


def whole_board(context: Any) -> Tuple[bool, str]:
    """(whether the host is the SKU's whole board, so counts of NICs per node apply; else why not in words).

    Only bare metal holding every GPU of the SKU's board is: a VM or container slice of an 8-GPU board has the NICs it
    was given, and a host whose platform was not recorded might be one."""
    shape = getattr(context, "machine", None)
    per_node = (getattr(context, "baseline", None) or {}).get("gpus_per_node")
    if shape is None:
        return False, "the machine's shape is not known (no health result), so it is not known to be the SKU's whole board"
    if getattr(shape, "is_slice", False):
        return False, "this host is a %s slice of the board (%s): it has the NICs it was given, not the board's" % (
            "virtual machine" if shape.platform == "vm" else "container", shape.platform_evidence)
    if shape.platform != "bare_metal":
        return False, "%s, so it is not known to be the SKU's whole board" % shape.platform_evidence
    expected_gpus = getattr(context, "expected_gpus", None)
    if per_node is not None and expected_gpus != per_node:
        return False, "this host should have %s of the board's %s GPUs (%s)" % (
            expected_gpus, per_node, getattr(context, "expected_gpus_source", ""))
    return True, "bare metal with the board's %s GPUs" % per_node
