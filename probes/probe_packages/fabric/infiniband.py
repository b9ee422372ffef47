"""RDMA devices and their ports, from /sys/class/infiniband (Documentation/ABI/stable/sysfs-class-infiniband).

The kernel prints a port's state as "4: ACTIVE", its physical state as "5: LinkUp" and its rate as
"400 Gb/sec (4X NDR)"; each becomes a code and words, or a number in Gb/s and the text as read. The GID table holds
one file per entry; an unused entry reads as zeros (or cannot be read at all on RoCE), so only non-zero GIDs count.
"""
from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Tuple

from probelib.fields import unavailable
from probelib.system.pci_place import driver_of, pci_function_dir, pci_place, sorted_names
from probelib.system.sysfs_class import read_class
from probelib.system.sysfs_field import matched, nonempty_text, read_value, whole_number

# The port counters of the IB PMA (ports/<n>/counters), named as the kernel names the files.
COUNTERS = ("symbol_error", "link_downed", "port_rcv_errors", "link_error_recovery", "port_xmit_discards",
            "port_rcv_remote_physical_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors",
            "port_xmit_constraint_errors", "port_rcv_constraint_errors", "VL15_dropped")
_CODE_AND_WORDS = re.compile(r"^([0-9]+):\s*(.+)$")
_RATE = re.compile(r"^([0-9]+(?:\.[0-9]+)?) Gb/sec\b")
_ZERO_GID = re.compile(r"^[0:]+$")
_LID = re.compile(r"^0x[0-9a-fA-F]+\Z")
NO_COUNTERS = "the driver offers no PMA counters for this port"
RATE_INVALID = "the port reports no valid speed or width (a port whose link is not up)"


def read_rdma_devices(sys_root: str) -> List[Dict[str, Any]]:
    """One entry per /sys/class/infiniband/<name>, sorted by name; [] when the class directory is absent."""
    return read_class(sys_root, "infiniband", read_rdma_device)


def read_rdma_device(entry: str, name: str) -> Dict[str, Any]:
    function_dir = pci_function_dir(entry)
    device: Dict[str, Any] = {"name": name}
    for field_name in ("hca_type", "board_id", "fw_ver", "node_guid", "sys_image_guid"):
        device[field_name] = read_value(os.path.join(entry, field_name), nonempty_text)
    device["node_type"] = read_value(os.path.join(entry, "node_type"), node_type)
    device.update(pci_place(function_dir))
    device["driver"] = driver_of(entry)
    device["netdevs"] = sorted_names(os.path.join(entry, "device", "net"))
    ports_dir = os.path.join(entry, "ports")
    numbers = sorted(int(number) for number in sorted_names(ports_dir) if number.isdigit())
    device["ports"] = [read_port(os.path.join(ports_dir, str(number))) for number in numbers]
    return device


def read_port(port_dir: str) -> Dict[str, Any]:
    port: Dict[str, Any] = {"port": int(os.path.basename(port_dir))}
    state = read_value(os.path.join(port_dir, "state"), code_and_words)
    phys_state = read_value(os.path.join(port_dir, "phys_state"), code_and_words)
    port["state"], port["state_code"] = _split(state)
    port["phys_state"], port["phys_state_code"] = _split(phys_state)
    port["rate_gbitps"] = read_value(os.path.join(port_dir, "rate"), rate_gbitps, invalid=RATE_INVALID)
    port["rate_text"] = read_value(os.path.join(port_dir, "rate"), nonempty_text, invalid=RATE_INVALID)
    port["link_layer"] = read_value(os.path.join(port_dir, "link_layer"), nonempty_text)
    port["lid"] = read_value(os.path.join(port_dir, "lid"), lid)
    port["gid_count"] = gid_count(os.path.join(port_dir, "gids"))
    counters_dir = os.path.join(port_dir, "counters")
    port["counters"] = {name: read_value(os.path.join(counters_dir, name), whole_number, NO_COUNTERS) for name in COUNTERS}
    return port


def code_and_words(text: str) -> Tuple[int, str]:
    """'4: ACTIVE' -> (4, 'ACTIVE'); '5: LinkUp' -> (5, 'LinkUp')."""
    match = matched(_CODE_AND_WORDS, text, "not '<code>: <words>'")
    return int(match.group(1)), match.group(2).strip()


def _split(value: Any) -> Tuple[Any, Any]:
    """(words, code) of a parsed state, or the same unavailable field twice."""
    if isinstance(value, tuple):
        return value[1], value[0]
    return value, value


def node_type(text: str) -> str:
    """'1: CA' -> 'CA'; the kernel prints the node type's code and its name."""
    return code_and_words(text)[1]


def rate_gbitps(text: str) -> float:
    """'400 Gb/sec (4X NDR)' -> 400.0; '2.5 Gb/sec (1X)' -> 2.5."""
    return float(matched(_RATE, text, "not '<number> Gb/sec (<width><speed>)'").group(1))


def lid(text: str) -> int:
    """'0xc' -> 12: the kernel prints the LID in hex."""
    return int(matched(_LID, text, "not a hex LID").group(0), 16)


def gid_count(gids_dir: str) -> Any:
    """How many entries of the port's GID table are set (non-zero); unreadable entries (unset on RoCE) do not count."""
    if not os.path.isdir(gids_dir):
        return unavailable("%s is missing (the driver offers no GID table)" % gids_dir)
    count = 0
    for name in sorted_names(gids_dir):
        try:
            with open(os.path.join(gids_dir, name), encoding="ascii") as handle:
                text = handle.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text and not _ZERO_GID.match(text):
            count += 1
    return count
