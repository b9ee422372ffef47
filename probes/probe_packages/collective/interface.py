"""The network interface whose IPv4 address routes to the rendezvous host (for GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME).

A UDP socket connected to master_addr sends nothing, but the kernel picks the source address it would
use; the interface holding that address (SIOCGIFADDR over socket.if_nameindex()) is the one to bind.
"""
from __future__ import annotations

import socket
import struct
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from probe_packages.collective.environment import SOCKET_IFNAME
from probelib.fields import unavailable

SIOCGIFADDR = 0x8915
IFNAMSIZ = 16


def resolve_ipv4(address: str) -> str:
    """The first IPv4 address of a host name or dotted address."""
    infos = socket.getaddrinfo(address, None, socket.AF_INET, socket.SOCK_DGRAM)
    if not infos:
        raise OSError("%s has no IPv4 address" % address)
    return infos[0][4][0]


def source_address_towards(address: str, port: int) -> str:
    """The local IPv4 address the kernel would use to reach ``address`` (no packet is sent)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect((resolve_ipv4(address), port or 9))
        return probe.getsockname()[0]
    finally:
        probe.close()


def interface_address(name: str) -> Optional[str]:
    """The IPv4 address of interface ``name`` (SIOCGIFADDR), or None when it has none."""
    import fcntl  # pylint: disable=import-outside-toplevel  # Unix only

    handle = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        request = struct.pack("256s", name.encode("utf-8")[:IFNAMSIZ - 1])
        answer = fcntl.ioctl(handle.fileno(), SIOCGIFADDR, request)
    except OSError:
        return None
    finally:
        handle.close()
    return socket.inet_ntoa(answer[20:24])


def interface_addresses(names: Optional[List[str]] = None,
                        address_of: Callable[[str], Optional[str]] = interface_address) -> Dict[str, str]:
    """{interface name: IPv4 address} of every interface that has one."""
    if names is None:
        names = [name for unused_index, name in socket.if_nameindex()]
    found = {}
    for name in names:
        address = address_of(name)
        if address:
            found[name] = address
    return found


def pick_interface(source: str, addresses: Dict[str, str]) -> Optional[str]:
    """The interface holding ``source``; loopback addresses (127/8) fall back to the interface holding any 127.x."""
    for name in sorted(addresses):
        if addresses[name] == source:
            return name
    if source.startswith("127."):
        for name in sorted(addresses):
            if addresses[name].startswith("127."):
                return name
    return None


def interface_towards(address: str, port: int) -> Tuple[str, str]:
    """(interface name, its IPv4 address) that routes to ``address``; raises OSError with the reason when none does."""
    source = source_address_towards(address, port)
    addresses = interface_addresses()
    name = pick_interface(source, addresses)
    if name is None:
        raise OSError("the route to %s leaves from %s, but no interface holds that address (interfaces: %s)"
                      % (address, source, ", ".join("%s=%s" % item for item in sorted(addresses.items())) or "none"))
    return name, source


def choose_interface(environ: Mapping[str, str], backend: str, requested: str, master_addr: str, port: int,
                     detect: Callable[[str, int], Tuple[str, str]] = interface_towards) -> Tuple[Any, str]:
    """(interface or unavailable, where it came from): the user's *_SOCKET_IFNAME, else ``requested``, else detection."""
    variable = SOCKET_IFNAME.get(backend, "")
    if variable and variable in environ:
        return environ[variable], "the user's %s" % variable
    if requested:
        return requested, "the socket_ifname parameter"
    try:
        name, address = detect(master_addr, port)
    except OSError as exc:
        return unavailable("no interface found that routes to %s: %s" % (master_addr, exc)), "detection failed"
    return name, "detected: it holds %s, the address that routes to %s" % (address, master_addr)
