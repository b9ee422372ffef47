"""PCI config space parsed from bytes: the PCI Express capability's registers, ACS, and every way the bytes can fail."""
import struct

from probe_packages.tuning.pci_config import BECOME, ConfigRead, parse_config
from tuning_trees import ACS_COMPLETION_REDIRECT, ACS_REQUEST_REDIRECT, GPU_CLASS, NVIDIA, RTX_PRO_6000, config_space

PATH = "/sys/bus/pci/devices/0000:13:00.0/config"
ACS_NAMES = ("source_validation", "translation_blocking", "request_redirect", "completion_redirect",
             "upstream_forwarding", "egress_control", "direct_translated")


def parsed(data, privileged=True):
    return parse_config(ConfigRead(data=data, path=PATH, privileged=privileged))


def gpu_config(**settings):
    return config_space(NVIDIA, RTX_PRO_6000, GPU_CLASS, **settings)


def test_the_pci_express_registers():
    result = parsed(gpu_config(max_payload_supported_bytes=512, max_payload_bytes=256, max_read_request_bytes=4096,
                               aspm_supported=2, aspm_control=0))
    assert result["max_payload_supported_bytes"] == 512
    assert result["max_payload_bytes"] == 256
    assert result["max_read_request_bytes"] == 4096
    assert result["aspm"] == {"supported": "L1", "control": "disabled"}


def test_every_aspm_encoding():
    supported = {0: "none", 1: "L0s", 2: "L1", 3: "L0s L1"}
    control = {0: "disabled", 1: "L0s", 2: "L1", 3: "L0s L1"}
    for code in range(4):
        assert parsed(gpu_config(aspm_supported=code, aspm_control=code))["aspm"] == {
            "supported": supported[code], "control": control[code]}


def test_the_pci_express_capability_anywhere_in_the_list():
    for offset in (0x60, 0x80, 0xA0, 0xC8):
        assert parsed(gpu_config(pcie_offset=offset, max_payload_bytes=512))["max_payload_bytes"] == 512


def test_acs_bits_and_what_redirects_peer_traffic():
    acs = parsed(gpu_config(acs_control=ACS_REQUEST_REDIRECT | ACS_COMPLETION_REDIRECT, acs_offset=0x2A0))["acs"]
    assert acs["present"] and acs["request_redirect"] and acs["completion_redirect"]
    assert acs["redirects_peer_traffic"] is True
    assert not acs["source_validation"] and not acs["egress_control"]
    for bit, name in enumerate(ACS_NAMES):
        acs = parsed(gpu_config(acs_control=1 << bit))["acs"]
        assert [key for key in ACS_NAMES if acs[key]] == [name]
        assert acs["redirects_peer_traffic"] is (name in ("request_redirect", "completion_redirect", "egress_control"))


def test_an_extended_space_without_acs_says_absent():
    acs = parsed(gpu_config(acs_control=None))["acs"]
    assert acs == dict({name: False for name in ACS_NAMES}, present=False, redirects_peer_traffic=False)
    empty_extended = bytearray(gpu_config())
    struct.pack_into("<I", empty_extended, 0x100, 0)
    assert parsed(bytes(empty_extended))["acs"]["present"] is False


def test_an_unprivileged_read_names_what_needs_root():
    result = parsed(gpu_config()[:64], privileged=False)
    for value in (result["max_payload_supported_bytes"], result["max_payload_bytes"], result["max_read_request_bytes"],
                  result["aspm"]["supported"], result["aspm"]["control"], result["acs"]):
        assert set(value) == {"unavailable"}
        assert "past the 64 bytes readable without root (read 64 bytes of %s)" % PATH in value["unavailable"]
        assert value["unavailable"].endswith(BECOME)
    assert result["max_read_request_bytes"]["unavailable"].startswith("MaxReadReq")
    assert result["acs"]["unavailable"].startswith("ACS")


def test_root_with_conventional_space_only_explains_acs():
    result = parsed(gpu_config()[:256])
    assert result["max_payload_bytes"] == 256
    assert "past the 256 bytes the kernel returned to root" in result["acs"]["unavailable"]
    assert BECOME not in result["acs"]["unavailable"]


def test_a_capability_list_that_loops():
    data = bytearray(gpu_config(acs_control=0))
    data[0x41] = 0x40  # the power-management capability points at itself
    result = parsed(bytes(data))
    assert "the capability list loops (back to 0x40)" in result["max_payload_bytes"]["unavailable"]
    assert result["acs"]["present"] is True  # extended space is walked on its own


def test_an_extended_list_that_loops_or_points_back():
    data = bytearray(gpu_config(acs_control=None))
    struct.pack_into("<I", data, 0x100, 0x0001 | 1 << 16 | 0x100 << 20)
    assert "loops" in parsed(bytes(data))["acs"]["unavailable"]
    struct.pack_into("<I", data, 0x100, 0x0001 | 1 << 16 | 0x080 << 20)
    assert "points into conventional space" in parsed(bytes(data))["acs"]["unavailable"]
    struct.pack_into("<I", data, 0x100, 0xFFFFFFFF)
    assert "all ones" in parsed(bytes(data))["acs"]["unavailable"]


def test_pointers_past_the_end_or_into_the_header():
    data = bytearray(gpu_config(pcie_offset=0xC0))
    result = parsed(bytes(data[:0xA0]))  # a read that ended before the capability it points at
    assert "past the 160 bytes the kernel returned to root" in result["max_read_request_bytes"]["unavailable"]
    data[0x34] = 0x10
    assert "points into the header (0x10)" in parsed(bytes(data))["max_payload_bytes"]["unavailable"]
    data = bytearray(gpu_config(pcie_offset=0xF8))
    assert "runs past conventional config space" in parsed(bytes(data))["aspm"]["control"]["unavailable"]


def test_no_capability_list_and_reserved_sizes():
    data = bytearray(gpu_config())
    struct.pack_into("<H", data, 0x06, 0)
    assert "lists no PCI Express capability" in parsed(bytes(data))["max_payload_bytes"]["unavailable"]
    data = bytearray(gpu_config())
    struct.pack_into("<H", data, 0x70 + 0x08, 7 << 5 | 6 << 12)
    result = parsed(bytes(data))
    assert "reserved size encoding 7" in result["max_payload_bytes"]["unavailable"]
    assert "reserved size encoding 6" in result["max_read_request_bytes"]["unavailable"]


def test_empty_and_tiny_reads_never_raise():
    for size in (0, 1, 7, 0x34, 0x35):
        result = parsed(gpu_config()[:size], privileged=False)
        assert "unavailable" in result["max_payload_bytes"] and "unavailable" in result["acs"]


def test_a_null_extended_capability_is_walked_past():
    """As the H200 VM gave it: the header at 0x100 has ID 0 (a capability the hypervisor hides) and points on."""
    data = bytearray(gpu_config(acs_control=ACS_REQUEST_REDIRECT, acs_offset=0x2A4))
    struct.pack_into("<I", data, 0x100, 0x12C << 20)
    struct.pack_into("<I", data, 0x12C, 0x0018 | 1 << 16 | 0x2A4 << 20)
    acs = parsed(bytes(data))["acs"]
    assert acs["present"] and acs["request_redirect"]
