"""What kind of network interface a /sys/class/net entry is: a device on a bus, or a virtual one and which.

sysfs says most of it: no ``device`` link means a virtual interface (the kernel puts it under /sys/devices/virtual);
a bridge has a ``bridge`` directory, a bond a ``bonding`` directory, a TUN/TAP device ``tun_flags``, and the
``uevent`` file names the DEVTYPE the driver set (bridge, bond, vlan, tun...). ARPHRD_INFINIBAND (type 32) on a
device-backed interface is IPoIB. A veth pair sets no DEVTYPE: its driver's name, which `ethtool -i` prints, comes
from the ETHTOOL_GDRVINFO ioctl, read here through the standard library.
"""
from __future__ import annotations

import array
import fcntl
import os
import socket
import struct
from typing import Callable, Dict, Optional

SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 3
DRVINFO_BYTES = 196  # struct ethtool_drvinfo: cmd, five 32-byte strings, 12 reserved bytes, five u32
DRIVER_NAME_BYTES = 32
IFREQ_BYTES = 40  # struct ifreq on a 64-bit kernel: a 16-byte name and a 24-byte union (here the ifr_data pointer)
ARPHRD_INFINIBAND = "32"
KIND_OF_DEVTYPE = {"bridge": "bridge", "bond": "bond", "vlan": "vlan", "tun": "tun"}
KIND_OF_DRIVER = {"veth": "veth", "bridge": "bridge", "bonding": "bond", "tun": "tun", "802.1Q VLAN Support": "vlan"}
DriverName = Callable[[str], Optional[str]]


def ethtool_driver(interface: str) -> Optional[str]:
    """The driver name ETHTOOL_GDRVINFO gives for the interface (in this network namespace), or None when the ioctl
    fails (no such interface, a driver without ethtool operations)."""
    buffer = array.array("B", struct.pack("=I", ETHTOOL_GDRVINFO) + bytes(DRVINFO_BYTES - 4))
    request = struct.pack("16sP", interface.encode()[:15], buffer.buffer_info()[0]).ljust(IFREQ_BYTES, b"\0")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            fcntl.ioctl(sock.fileno(), SIOCETHTOOL, request)
    except OSError:
        return None
    name = buffer.tobytes()[4:4 + DRIVER_NAME_BYTES].split(b"\0", 1)[0].decode("ascii", "replace")
    return name or None


def uevent(entry: str) -> Dict[str, str]:
    """KEY=value lines of the entry's uevent file ({} when unreadable)."""
    try:
        with open(os.path.join(entry, "uevent"), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    return dict(line.split("=", 1) for line in lines if "=" in line)


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def interface_kind(entry: str, driver_name: DriverName = ethtool_driver) -> str:
    """'physical', 'ipoib' (both device-backed; IPoIB counts as virtual), or a device-less kind: 'bridge', 'bond',
    'vlan', 'tun', 'veth', 'other-virtual'."""
    if os.path.exists(os.path.join(entry, "device")):
        return "ipoib" if _read(os.path.join(entry, "type")) == ARPHRD_INFINIBAND else "physical"
    if os.path.isdir(os.path.join(entry, "bridge")):
        return "bridge"
    if os.path.isdir(os.path.join(entry, "bonding")):
        return "bond"
    if os.path.exists(os.path.join(entry, "tun_flags")):
        return "tun"
    devtype = uevent(entry).get("DEVTYPE", "")
    if devtype in KIND_OF_DEVTYPE:
        return KIND_OF_DEVTYPE[devtype]
    return KIND_OF_DRIVER.get(driver_name(os.path.basename(entry)) or "", "other-virtual")
