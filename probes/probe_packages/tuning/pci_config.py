"""PCI config space, parsed from the bytes of /sys/bus/pci/devices/<address>/config: MaxPayload, MaxReadReq, ASPM, ACS.

Pure: bytes in, fields out. Without root the kernel returns the first 64 bytes only (the header), so every field past
them is unavailable with the words that say how to get it; a capability list that loops or points where it may not
makes that field's reason, never an exception.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Set

from probelib.fields import unavailable

UNPRIVILEGED_CONFIG_BYTES = 64
CONVENTIONAL_CONFIG_BYTES = 256
EXTENDED_CONFIG_BYTES = 4096
BECOME = "run the tuning probe with become (gpufleet_become_probes: [tuning])"

STATUS_REGISTER = 0x06
STATUS_CAPABILITY_LIST = 0x10
CAPABILITIES_POINTER = 0x34
FIRST_CAPABILITY = 0x40
PCI_EXPRESS_CAPABILITY_ID = 0x10
# Registers of the PCI Express capability, from its start.
DEVICE_CAPABILITIES = 0x04
DEVICE_CONTROL = 0x08
LINK_CAPABILITIES = 0x0C
LINK_CONTROL = 0x10
PCI_EXPRESS_CAPABILITY_BYTES = 0x14
ACS_EXTENDED_CAPABILITY_ID = 0x000D
ACS_CONTROL = 0x06
ACS_CAPABILITY_BYTES = 0x08
# 48 capabilities of 4 bytes fill conventional space; 480 of 8 bytes fill extended space: more means a loop.
MAX_CAPABILITIES = 48
MAX_EXTENDED_CAPABILITIES = 480

ASPM_SUPPORT = {0: "none", 1: "L0s", 2: "L1", 3: "L0s L1"}
ASPM_CONTROL = {0: "disabled", 1: "L0s", 2: "L1", 3: "L0s L1"}
ACS_CONTROL_BITS = (
    ("source_validation", 0), ("translation_blocking", 1), ("request_redirect", 2), ("completion_redirect", 3),
    ("upstream_forwarding", 4), ("egress_control", 5), ("direct_translated", 6),
)
MAX_SIZE_ENCODING = 5  # 128 << 5 = 4096 bytes; 6 and 7 are reserved

FIELD_MAX_PAYLOAD_SUPPORTED = "MaxPayload supported (Device Capabilities)"
FIELD_MAX_PAYLOAD = "MaxPayload (Device Control)"
FIELD_MAX_READ_REQUEST = "MaxReadReq (Device Control)"
FIELD_ASPM_SUPPORT = "ASPM support (Link Capabilities)"
FIELD_ASPM_CONTROL = "ASPM control (Link Control)"
FIELD_ACS = "ACS (extended capability 0x000D)"


class NotRead(Exception):
    """The field needs config bytes at ``end`` or before it that the read did not return."""

    def __init__(self, end: int) -> None:
        super().__init__(end)
        self.end = end


class Malformed(Exception):
    """The capability lists say something no device may say (a loop, a pointer into the header)."""


@dataclass(frozen=True)
class ConfigRead:
    """The bytes one read of a device's config file returned; path is the file, for the reasons."""

    data: bytes
    path: str
    privileged: bool


class ConfigSpace:
    def __init__(self, read: ConfigRead) -> None:
        self.read = read
        self._pcie: Any = None
        self._pcie_found = False

    def value(self, offset: int, size: int) -> int:
        if offset + size > len(self.read.data):
            raise NotRead(offset + size)
        return int.from_bytes(self.read.data[offset:offset + size], "little")

    def pci_express_capability(self) -> Optional[int]:
        """The offset of the PCI Express capability, or None when the device has none."""
        if not self._pcie_found:
            self._pcie = self._find_capability(PCI_EXPRESS_CAPABILITY_ID)
            self._pcie_found = True
        return self._pcie

    def _find_capability(self, wanted: int) -> Optional[int]:
        if not self.value(STATUS_REGISTER, 2) & STATUS_CAPABILITY_LIST:
            return None
        offset = self.value(CAPABILITIES_POINTER, 1) & 0xFC
        seen: Set[int] = set()
        while offset:
            if offset < FIRST_CAPABILITY:
                raise Malformed("the capability list points into the header (0x%02x)" % offset)
            if offset in seen or len(seen) >= MAX_CAPABILITIES:
                raise Malformed("the capability list loops (back to 0x%02x)" % offset)
            seen.add(offset)
            if self.value(offset, 1) == wanted:
                return offset
            offset = self.value(offset + 1, 1) & 0xFC
        return None

    def find_extended_capability(self, wanted: int) -> Optional[int]:
        """The offset of an extended capability, or None when the extended list has none (or is empty)."""
        offset = CONVENTIONAL_CONFIG_BYTES
        seen: Set[int] = set()
        while True:
            header = self.value(offset, 4)
            if offset == CONVENTIONAL_CONFIG_BYTES and header in (0, 0xFFFFFFFF):
                if header == 0xFFFFFFFF:
                    raise Malformed("the extended config space reads all ones (no extended space is reachable)")
                return None
            if header & 0xFFFF == wanted:
                return offset
            following = (header >> 20) & 0xFFC
            if not following:
                return None
            if following < CONVENTIONAL_CONFIG_BYTES:
                raise Malformed("the extended capability at 0x%03x points into conventional space (0x%03x)"
                                % (offset, following))
            if following in seen or len(seen) >= MAX_EXTENDED_CAPABILITIES:
                raise Malformed("the extended capability list loops (back to 0x%03x)" % following)
            seen.add(offset)
            offset = following

    def not_read_reason(self, field: str, problem: NotRead) -> str:
        read = self.read
        if not read.privileged and len(read.data) <= UNPRIVILEGED_CONFIG_BYTES:
            return ("%s is in PCI config space past the %d bytes readable without root (read %d bytes of %s); %s"
                    % (field, UNPRIVILEGED_CONFIG_BYTES, len(read.data), read.path, BECOME))
        return ("%s needs config bytes up to 0x%03x, past the %d bytes the kernel returned%s from %s: the device or "
                "the platform (a VM, a conventional PCI device) exposes no more config space"
                % (field, problem.end, len(read.data), " to root" if read.privileged else "", read.path))


def parse_config(read: ConfigRead) -> Dict[str, Any]:
    """max_payload_supported_bytes, max_payload_bytes, max_read_request_bytes, aspm {supported, control}, acs."""
    space = ConfigSpace(read)
    return {
        "max_payload_supported_bytes": _pcie_field(space, FIELD_MAX_PAYLOAD_SUPPORTED, DEVICE_CAPABILITIES, 4,
                                                   lambda value: _size_bytes(value & 0x7)),
        "max_payload_bytes": _pcie_field(space, FIELD_MAX_PAYLOAD, DEVICE_CONTROL, 2,
                                         lambda value: _size_bytes((value >> 5) & 0x7)),
        "max_read_request_bytes": _pcie_field(space, FIELD_MAX_READ_REQUEST, DEVICE_CONTROL, 2,
                                              lambda value: _size_bytes((value >> 12) & 0x7)),
        "aspm": {
            "supported": _pcie_field(space, FIELD_ASPM_SUPPORT, LINK_CAPABILITIES, 4,
                                     lambda value: ASPM_SUPPORT[(value >> 10) & 0x3]),
            "control": _pcie_field(space, FIELD_ASPM_CONTROL, LINK_CONTROL, 2, lambda value: ASPM_CONTROL[value & 0x3]),
        },
        "acs": read_acs(space),
    }


def _pcie_field(space: ConfigSpace, field: str, register: int, size: int, decode: Callable[[int], Any]) -> Any:
    try:
        capability = space.pci_express_capability()
        if capability is None:
            return unavailable("%s: %s lists no PCI Express capability (a conventional PCI device, or no capability "
                               "list)" % (field, space.read.path))
        if capability + PCI_EXPRESS_CAPABILITY_BYTES > CONVENTIONAL_CONFIG_BYTES:
            raise Malformed("the PCI Express capability at 0x%02x runs past conventional config space" % capability)
        return decode(space.value(capability + register, size))
    except NotRead as problem:
        return unavailable(space.not_read_reason(field, problem))
    except Malformed as problem:
        return unavailable("%s could not be read: %s (%s)" % (field, problem, space.read.path))


def _size_bytes(encoding: int) -> Any:
    if encoding > MAX_SIZE_ENCODING:
        return unavailable("the register holds the reserved size encoding %d" % encoding)
    return 128 << encoding


def read_acs(space: ConfigSpace) -> Any:
    """The ACS control bits; present false with every bit false for a device whose extended space has no ACS."""
    try:
        capability = space.find_extended_capability(ACS_EXTENDED_CAPABILITY_ID)
        if capability is None:
            return acs_fields(None)
        if capability + ACS_CAPABILITY_BYTES > EXTENDED_CONFIG_BYTES:
            raise Malformed("the ACS capability at 0x%03x runs past extended config space" % capability)
        return acs_fields(space.value(capability + ACS_CONTROL, 2))
    except NotRead as problem:
        return unavailable(space.not_read_reason(FIELD_ACS, problem))
    except Malformed as problem:
        return unavailable("%s could not be read: %s (%s)" % (FIELD_ACS, problem, space.read.path))


def acs_fields(control: Optional[int]) -> Dict[str, bool]:
    """control: the ACS Control register, or None for a device without ACS."""
    fields = {"present": control is not None}
    for name, bit in ACS_CONTROL_BITS:
        fields[name] = control is not None and bool(control >> bit & 1)
    fields["redirects_peer_traffic"] = fields["request_redirect"] or fields["completion_redirect"] or \
        fields["egress_control"]
    return fields
