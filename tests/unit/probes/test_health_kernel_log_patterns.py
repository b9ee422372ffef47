"""Each kernel-log pattern against lines in the formats the kernel and the NVIDIA driver print (quoted in
kernel_log_patterns.py's sources), and near-misses that must not match."""
import pytest

from probe_packages.health.kernel_log_classify import MAX_EVENTS_PER_KIND, MAX_LINE_CHARS, classify_line, classify_lines
from probe_packages.health.kernel_log_patterns import KINDS, PATTERNS
from probelib.secret_shapes import CREDENTIAL_MARKER

# (line, kind, device, detail subset)
MATCHES = [
    ("[ 9312.101] nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
     "sxid", "0000:c1:00.0", {"sxid": 12028, "fatal": False, "switch": "nvidia-nvswitch3"}),
    ("kernel: [123.456789] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
     "sxid", "0000:c3:00.0", {"sxid": 20034, "fatal": True}),
    ("[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0\\x0a               NVRM: (PCI ID: 10de:26b5) installed in this "
     "system has\\x0a               NVRM: fallen off the bus and is not responding to commands.",
     "fallen_off_bus", "0000:b3:00.0", {}),
    ("2025-03-02T10:11:12+0000 gpu07 kernel: NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.",
     "fallen_off_bus", "0000:1b:00.0", {}),
    ("NVRM: GPU at PCI:0000:8d:00: GPU has fallen off the bus.", "fallen_off_bus", "0000:8d:00.0", {}),
    ("[   77.119951] pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0",
     "pcie_aer_corrected", "0000:01:00.0", {}),
    ("[   77.119973] i40e 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)",
     "pcie_aer_corrected", "0000:01:00.0", {}),
    ("pcieport 0000:00:1c.5: AER: Multiple Corrected error received: 0000:00:1c.5", "pcie_aer_corrected", "0000:00:1c.5", {}),
    ("pcieport 0000:00:1c.5: AER: Corrected error received: id=00e5", "pcie_aer_corrected", "0000:00:1c.5", {}),
    ("pcieport 0000:00:1c.0: AER: Correctable error message received from 0000:03:00.0", "pcie_aer_corrected", "0000:03:00.0", {}),
    ("pcieport 0000:00:1c.0: AER: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)",
     "pcie_aer_corrected", "0000:00:1c.0", {}),
    ("pcieport 0000:00:03.1: AER: Uncorrected (Non-Fatal) error received: 0000:21:00.0",
     "pcie_aer_uncorrected", "0000:21:00.0", {}),
    ("pcieport 0000:00:1c.0: AER: Multiple Uncorrectable (Non-Fatal) error message received from 0000:73:00.1",
     "pcie_aer_uncorrected", "0000:73:00.1", {}),
    ("nvidia 0000:21:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)",
     "pcie_aer_uncorrected", "0000:21:00.0", {}),
    ("pcieport 0000:00:03.1: AER: Uncorrected (Fatal) error received: 0000:21:00.0", "pcie_aer_fatal", "0000:21:00.0", {}),
    ("nvidia 0000:1b:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)",
     "pcie_aer_fatal", "0000:1b:00.0", {}),
    ("pcieport 0000:00:1c.0: AER: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, (Receiver ID)",
     "pcie_aer_fatal", "0000:00:1c.0", {}),
    ("mlx5_core 0000:12:00.0: wait_func:1126:(pid 8): CREATE_MKEY(0x200) timeout. Will cause a leak of a command resource",
     "mlx5_fatal", "0000:12:00.0", {}),
    ("mlx5_core 0000:12:00.0: poll_health:801:(pid 0): device's health compromised - reached miss count",
     "mlx5_fatal", "0000:12:00.0", {}),
    ("mlx5_core 0000:0c:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 16.0 GT/s PCIe x8 link at 0000:00:01.1 "
     "(capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)",
     "mlx5_pcie_limited", "0000:0c:00.0", {"limited_by": "16.0 GT/s PCIe x8", "at": "0000:00:01.1"}),
    ("pci 0000:01:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at 0000:00:01.0 "
     "(capable of 126.016 Gb/s with 8.0 GT/s PCIe x16 link)", "pcie_limited", "0000:01:00.0", {"limited_by": "8.0 GT/s PCIe x8"}),
    ("[ 3742.841089] NVRM: nvAssertFailed: Assertion failed: (shifted >> pField->shift) == value @ field_desc.h:272",
     "nvrm_assert", None, {}),
    ("[  549.169175] NVRM: nvAssertFailedNoLog: Assertion failed: rmStatus == NV_OK @ osinit.c:2464", "nvrm_assert", None, {}),
    ("mlx5_core 0000:0c:00.0 ens1np0: Link down", "nic_link_down", "ens1np0", {"pci_address": "0000:0c:00.0"}),
    ("mlx5_core 0000:0c:00.0 ens1np0: Link up", "nic_link_up", "ens1np0", {"pci_address": "0000:0c:00.0"}),
    ("ixgbe 0000:01:00.0 eth0: NIC Link is Down", "nic_link_down", "eth0", {}),
    ("igb 0000:01:00.0 eno1: igb: eno1 NIC Link is Down", "nic_link_down", "eno1", {}),
    ("e1000e 0000:00:19.0 eth0: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: None", "nic_link_up", "eth0", {}),
    ("r8169 0000:02:00.0 enp2s0: Link is Down", "nic_link_down", "enp2s0", {}),
    ("bnxt_en 0000:41:00.0 ens3f0np0: NIC Link is Down", "nic_link_down", "ens3f0np0", {}),
    ("eth0: lost carrier", "nic_link_down", "eth0", {}),
    ("[32729.628211] gf0scldbr: port 1(gf0scldv0) entered disabled state", "nic_link_down", "gf0scldv0", {"bridge": "gf0scldbr"}),
    ("[32729.635206] gf0scldbr: port 1(gf0scldv0) entered forwarding state", "nic_link_up", "gf0scldv0", {"bridge": "gf0scldbr"}),
]

NEAR_MISSES = [
    "NVRM: Xid (PCI:0000:1b:00): 79, pid=2814, name=python3, GPU has fallen off the bus.",   # an XID: the XID check's
    "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.159.04",
    "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): garbled, Fatal",
    "nvidia-nvswitch0: probe of 0000:c3:00.0 failed",
    "usb 1-1: USB disconnect, device number 2 fallen off the bus",                              # not the NVIDIA driver
    "pcieport 0000:00:1c.0: AER:   device [8086:a292] error status/mask=00003000/00002000",
    "pcieport 0000:00:1c.0: AER:    [12] Timeout",
    "pcieport 0000:00:01.0: AER: enabled with IRQ 27",
    "acpi PNP0A08:00: _OSC: OS now controls [PCIeHotplug SHPCHotplug PME AER PCIeCapability LTR]",
    "mlx5_core 0000:0c:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)",
    "mlx5_core 0000:0c:00.0: mlx5_cmd_out_err:838:(pid 1): ACCESS_REG(0x805) op_mod(0x1) failed, status bad parameter(0x3)",
    "mlx5_core 0000:0c:00.0: firmware version: 28.39.1002",
    "NVRM: GPU at PCI:0000:8d:00: GPU-b850f46d-d5ea-c752-ddf3-c4453e44d3f7",
    "NVRM: nvCheckOkFailedNoLog: Check failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST] (0x0000000F)",
    "[32729.628204] gf0scldbr: port 1(gf0scldv0) entered blocking state",
    "[32729.628223] gf0scldv0: entered allmulticast mode",
    "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    "systemd-networkd[812]: eth0: Link UP",
    "audit: type=1400 audit(1700000000.000:12): apparmor=\"DENIED\" operation=\"open\" name=\"/proc/Link down\"",
]


@pytest.mark.parametrize("line, kind, device, detail", MATCHES)
def test_pattern_matches_the_real_format(line, kind, device, detail):
    event = classify_line(line)
    assert event is not None, line
    assert (event["kind"], event["device"]) == (kind, device)
    assert {key: event["detail"][key] for key in detail} == detail


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_miss_is_not_classified(line):
    assert classify_line(line) is None


def test_every_kind_has_a_real_line_and_every_pattern_its_texts():
    assert {kind for unused, kind, unused_device, unused_detail in MATCHES} == set(KINDS)
    for pattern in PATTERNS:
        assert pattern.meaning and pattern.action and pattern.source and pattern.severity


def test_one_aer_error_is_counted_once_though_printed_twice():
    lines = ["[   77.119951] pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0",
             "[   77.119973] i40e 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)",
             "[   77.119981] i40e 0000:01:00.0:   device [8086:1589] error status/mask=00001000/00002000",
             "[   77.119990] i40e 0000:01:00.0:    [12] Timeout",
             "[   78.000000] pcieport 0000:00:01.0: AER: Corrected error received: 0000:01:00.0",
             "[   78.000001] i40e 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)",
             # a detail line with no notice before it (the notice scrolled away): counted
             "[   99.000001] i40e 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)"]
    result = classify_lines(lines)
    assert result["counts"] == {"pcie_aer_corrected": 3}
    assert [event["line"][:16] for event in result["events"]] == ["[   77.119951] p", "[   78.000000] p", "[   99.000001] i"]


def test_fallen_off_without_an_address_takes_the_gpu_named_just_before():
    lines = ["[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0",
             "[ 1843.308146] NVRM: (PCI ID: 10de:26b5) installed in this system has",
             "[ 1843.308147] NVRM: fallen off the bus and is not responding to commands.",
             "[ 1900.000000] something else", "[ 1900.000001] something else", "[ 1900.000002] something else",
             "[ 1900.000003] NVRM: fallen off the bus and is not responding to commands."]
    result = classify_lines(lines)
    assert [(event["kind"], event["device"]) for event in result["events"]] == [
        ("fallen_off_bus", "0000:b3:00.0"), ("fallen_off_bus", None)]


def test_events_are_capped_per_kind_and_counted_in_full():
    lines = ["br0: port 1(veth%d) entered disabled state" % number for number in range(MAX_EVENTS_PER_KIND + 7)]
    lines.append("NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.")
    result = classify_lines(lines)
    assert result["counts"] == {"nic_link_down": MAX_EVENTS_PER_KIND + 7, "fallen_off_bus": 1}
    assert result["events_not_recorded"] == {"nic_link_down": 7}
    assert len(result["events"]) == MAX_EVENTS_PER_KIND + 1
    assert result["events"][-1]["kind"] == "fallen_off_bus"


def test_recorded_lines_are_capped_and_carry_no_credential():
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    event = classify_line("NVRM: nvAssertFailed: Assertion failed: token=%s @ x.c:1 %s" % (token, "x" * 400))
    assert token not in event["line"] and CREDENTIAL_MARKER in event["line"]
    assert len(event["line"]) == MAX_LINE_CHARS
    assert event["line"].endswith("\u2026")
