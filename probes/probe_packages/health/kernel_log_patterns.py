"""The kernel-log lines beyond XID that the health probe classifies: one KernelLogPattern per kind of line, as data.

Each pattern says what the line means, what to do about it, how severe it is as printed, and where its exact format
comes from (docs/health.md "Kernel log beyond XID" renders this table). The host only classifies; which lines are
benign is decided by the judge (plugins/plugin_utils/probes/health/rules.yaml: health.kernel_log_events), so a user's benign list needs no re-run.
Patterns are tried in order; the first that matches a line classifies it.
"""
from __future__ import annotations

import re
from typing import NamedTuple, Tuple

# A PCI address as the kernel prints it: 0000:1b:00.0 (the function may be missing in NVRM's older lines).
PCI = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?"
# A network interface name (IFNAMSIZ 16 with the NUL): letters, digits and . _ - @.
IFNAME = r"[A-Za-z0-9_.@-]{1,15}"
# AER's words: "Corrected"/"Uncorrected" until Linux 6.10, "Correctable"/"Uncorrectable" since; the notice says
# "error received: <dev>" (older: "id=00e5") or "error message received from <dev>".
CORRECTED = r"Correct(?:ed|able)"
UNCORRECTED = r"Uncorrect(?:ed|able)"
RECEIVED = r"(?:message )?received(?::| from) (?:id=)?(?P<source>\S+)"


class KernelLogPattern(NamedTuple):
    kind: str            # the event's kind in data.kernel_log.events and counts
    regex: re.Pattern[str]  # searched in the line; named group "device" (and "pci", "sxid", "severity" where present)
    meaning: str
    action: str
    severity: str        # as printed or documented: "fatal", "error", "warning", "info"
    source: str          # where the exact format comes from


PATTERNS: Tuple[KernelLogPattern, ...] = (
    KernelLogPattern(
        "sxid",
        re.compile(r"(?P<switch>nvidia-nvswitch\d+): SXid \(PCI:(?P<device>" + PCI + r")\): (?P<sxid>\d+), "
                   r"(?P<severity>Fatal|Non-fatal)\b"),
        "An NVSwitch error (Switch XID) reported by the NVSwitch driver; the line says Fatal or Non-fatal.",
        "Fatal: drain the node, reset the GPUs and NVSwitches (or reboot) and restart Fabric Manager; repeated: "
        "RMA the baseboard. Non-fatal: watch for repeats on the same link.",
        "per line: fatal or error",
        "NVIDIA Fabric Manager User Guide, SXid messages; format 'nvidia-nvswitch3: SXid (PCI:0000:c1:00.0): 12028, "
        "Non-fatal, Link 32 ...' as NVSentinel's syslog-health-monitor parses it (SysLogsSXIDError)"),
    KernelLogPattern(
        "fallen_off_bus",
        re.compile(r"NVRM: (?:(?:The NVIDIA )?GPU (?:at PCI:)?(?P<device>" + PCI + r")\b.*?)?"
                   r"(?:GPU has )?fallen off the bus"),
        "The GPU stopped answering on PCIe: the driver can no longer reach it. Printed with or without an XID 79.",
        "Drain the node and reboot it; if the GPU falls off again, reseat it or RMA it (check its PCIe slot and power).",
        "fatal",
        "NVIDIA XID catalogue, XID 79 (RESTART_BM); driver lines 'NVRM: The NVIDIA GPU 0000:b3:00.0 ... NVRM: fallen off "
        "the bus and is not responding to commands.' and 'NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.' as "
        "NVSentinel's GPUFallenHandler matches them (NVIDIA/NVSentinel #155: fallen off without an XID)"),
    KernelLogPattern(
        "pcie_aer_fatal",
        re.compile(r"(?:(?P<device>" + PCI + r"): (?:AER: )?PCIe Bus Error: severity=(?:" + UNCORRECTED + r" \()?Fatal\)?"
                   r"|AER: (?:Multiple )?" + UNCORRECTED + r" \(Fatal\) error " + RECEIVED + r")"),
        "An uncorrectable fatal PCIe error: the link is unreliable and the kernel resets it; the device may be lost.",
        "Drain the node; reseat the device or its riser; RMA it if the error returns.",
        "fatal",
        "Linux drivers/pci/pcie/aer.c (aer_print_error: 'PCIe Bus Error: severity=%s, type=%s, (%s)'; "
        "aer_isr_one_error: 'AER: Uncorrected (Fatal) error received: %s'); Documentation/PCI/pcieaer-howto.rst"),
    KernelLogPattern(
        "pcie_aer_uncorrected",
        re.compile(r"(?:(?P<device>" + PCI + r"): (?:AER: )?PCIe Bus Error: severity=" + UNCORRECTED + r"(?: \(Non-Fatal\))?,"
                   r"|AER: (?:Multiple )?" + UNCORRECTED + r" \(Non-Fatal\) error " + RECEIVED + r")"),
        "An uncorrectable non-fatal PCIe error: a transaction was lost (the driver may recover it).",
        "Drain the node; reseat the device or its riser and re-run; RMA it if the error returns.",
        "error",
        "Linux drivers/pci/pcie/aer.c (aer_error_severity_string 'Uncorrected (Non-Fatal)'; "
        "'AER: Uncorrected (Non-Fatal) error received: %s')"),
    KernelLogPattern(
        "pcie_aer_corrected",
        re.compile(r"(?:(?P<device>" + PCI + r"): (?:AER: )?PCIe Bus Error: severity=" + CORRECTED + r","
                   r"|AER: (?:Multiple )?" + CORRECTED + r" error " + RECEIVED + r")"),
        "A corrected PCIe error (bad TLP/DLLP, receiver error, replay): the link retried; many mean a marginal link.",
        "A few are normal; many on one device: reseat it or its riser, check the slot, compare with its peers.",
        "warning",
        "Linux drivers/pci/pcie/aer.c ('AER: Corrected error received: %s', 'PCIe Bus Error: severity=Corrected, ...'; "
        "since 6.10 'Correctable error message received from %s')"),
    KernelLogPattern(
        "mlx5_fatal",
        re.compile(r"mlx5_core (?P<device>" + PCI + r")[^:]*:.*(?:timeout\. Will cause a leak of a command resource"
                   r"|device's health compromised|unrecoverable)"),
        "The ConnectX NIC's firmware stopped answering its driver (command timeout, missed health polls, unrecoverable).",
        "Drain the node; reload the driver or reboot; if it returns, update the NIC firmware or RMA the NIC.",
        "fatal",
        "Linux drivers/net/ethernet/mellanox/mlx5/core/cmd.c and health.c; NVSentinel NIC syslog detection "
        "(cmd_exec_timeout, health_poll_failed, unrecoverable_err: fatal)"),
    KernelLogPattern(
        "mlx5_pcie_limited",
        re.compile(r"mlx5_core (?P<device>" + PCI + r")[^:]*: [0-9.]+ Gb/s available PCIe bandwidth, limited by "
                   r"(?P<limit>.+?) link at (?P<at>\S+) \(capable of"),
        "The ConnectX NIC trained its PCIe link narrower or slower than it can: its bandwidth is capped.",
        "Reseat the NIC or its riser; check the slot's width and the BIOS's bifurcation; compare with its peers.",
        "warning",
        "Linux drivers/pci/pci.c __pcie_print_link_status ('%u.%03u Gb/s available PCIe bandwidth, limited by %s x%d "
        "link at %s (capable of ...)'), called by mlx5_core at probe"),
    KernelLogPattern(
        "pcie_limited",
        re.compile(r"(?P<driver>[\w-]+) (?P<device>" + PCI + r")[^:]*: [0-9.]+ Gb/s available PCIe bandwidth, limited by "
                   r"(?P<limit>.+?) link at (?P<at>\S+) \(capable of"),
        "A PCIe device trained its link narrower or slower than it can (printed by the PCI core at enumeration).",
        "For a GPU or NIC: reseat it or its riser, check the slot; for other devices usually nothing to do.",
        "info",
        "Linux drivers/pci/pci.c __pcie_print_link_status"),
    KernelLogPattern(
        "nvrm_assert",
        re.compile(r"NVRM: (?:nvAssert\w*Failed\w*|nvCheckOk\w*Failed\w*)?:? ?Assertion failed"),
        "An internal assertion of the NVIDIA driver failed: driver state is suspect (often with a GSP or RC error).",
        "Look at the XIDs around it; reboot if the GPU misbehaves; report it to NVIDIA with nvidia-bug-report.sh.",
        "error",
        "NVIDIA open-gpu-kernel-modules nvAssertFailed / nvAssertFailedNoLog ('NVRM: nvAssertFailedNoLog: Assertion "
        "failed: ... @ file.c:line')"),
    KernelLogPattern(
        "nic_link_down",
        re.compile(r"(?:(?P<driver>[\w-]+) (?P<pci>" + PCI + r") )?(?P<device>" + IFNAME + r"): "
                   r"(?:(?:\w+: \S+ )?NIC Link is Down|Link is Down|Link down|[Ll]ost carrier|carrier lost)\b"),
        "A network interface lost its link (cable, transceiver, switch port, or the interface taken down).",
        "A single down is an event; repeated downs (flaps) on one port: check the cable/transceiver and the switch port.",
        "warning",
        "mlx5 en_main.c mlx5e_update_carrier ('Link down'/'Link up'); Intel igb/ixgbe/i40e/e1000e ('NIC Link is "
        "Down'); generic phylib/r8169 ('Link is Down'); node-problem-detector kernel-monitor style line rules"),
    KernelLogPattern(
        "nic_link_down",
        re.compile(r"(?P<bridge>" + IFNAME + r"): port \d+\((?P<device>" + IFNAME + r")\) entered disabled state"),
        "A bridge port went down (its interface lost its link or was removed).",
        "Usually container or VM plumbing (veth, tap): benign. A physical NIC in a bridge: as a link down.",
        "info",
        "Linux net/bridge/br_stp.c br_log_state ('%s: port %i(%s) entered %s state')"),
    KernelLogPattern(
        "nic_link_up",
        re.compile(r"(?:(?P<driver>[\w-]+) (?P<pci>" + PCI + r") )?(?P<device>" + IFNAME + r"): "
                   r"(?:(?:\w+: \S+ )?NIC Link is Up|Link is Up|Link up)\b"),
        "A network interface's link came up.",
        "Nothing alone; counted with link downs to see flaps.",
        "info",
        "mlx5 en_main.c ('Link up'); Intel drivers ('NIC Link is Up ...'); phylib ('Link is Up - ...')"),
    KernelLogPattern(
        "nic_link_up",
        re.compile(r"(?P<bridge>" + IFNAME + r"): port \d+\((?P<device>" + IFNAME + r")\) entered forwarding state"),
        "A bridge port started forwarding (its interface is up).",
        "Nothing.",
        "info",
        "Linux net/bridge/br_stp.c br_log_state"),
)

KINDS: Tuple[str, ...] = tuple(sorted(set(pattern.kind for pattern in PATTERNS)))
