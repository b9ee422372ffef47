# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health checks of the kernel log beyond XID and of the PCIe AER counters.

kernel_log_events judges data.kernel_log.events (classified on the host by probes/probe_packages/health/kernel_log_patterns.py):
one check per kind found, each naming every device with its count and first line. The rule's benign_patterns (built
in) and extra_benign_patterns (a user's, added through the inventory's rule overrides) are matched here, at the judge,
so a new benign line needs no re-run: a benign line is shown as benign and never fails. pcie_aer_counters judges
data.pcie_aer (the aer_dev_* totals since boot).
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ...probe_kit.kit import CheckFunction, make_check, param_source, reads_params, Check, MISSING, dig, is_unavailable

# kind -> (words, action, remedy); the host's pattern table has the longer meaning and the format's source.
KIND_TEXTS: Dict[str, Tuple[str, str, str]] = {
    "sxid": ("NVSwitch SXID", "drain", "Fatal SXID: drain, reset the GPUs and NVSwitches (or reboot) and restart Fabric "
             "Manager; non-fatal: watch the link for repeats. Look the SXID up in the Fabric Manager User Guide."),
    "fallen_off_bus": ("GPU fallen off the bus", "reseat_rma", "Drain and reboot the node; if the GPU falls off again, "
                       "reseat it and check its slot and power, then RMA it."),
    "pcie_aer_fatal": ("PCIe fatal uncorrectable error", "reseat_rma", "Drain the node; reseat the device or its riser; "
                       "RMA it if the error returns."),
    "pcie_aer_uncorrected": ("PCIe uncorrectable (non-fatal) error", "reseat_rma", "Drain the node; reseat the device or "
                             "its riser and re-run; RMA it if the error returns."),
    "pcie_aer_corrected": ("PCIe corrected error", "reseat_rma", "Many corrected errors on one device mean a marginal "
                           "link: reseat the device or its riser, check the slot, compare with its peers."),
    "mlx5_fatal": ("ConnectX firmware not answering", "drain", "Drain the node; reload mlx5_core or reboot; update the "
                   "NIC firmware or RMA the NIC if it returns."),
    "mlx5_pcie_limited": ("ConnectX PCIe link limited", "reseat_rma", "Reseat the NIC or its riser; check the slot width "
                          "and the BIOS bifurcation; compare with its peers."),
    "pcie_limited": ("PCIe link limited", "reseat_rma", "For a GPU: reseat it or its riser and check the slot; for "
                     "other devices usually nothing to do."),
    "nvrm_assert": ("NVIDIA driver assertion", "rerun", "Look at the XIDs around it; reboot if the GPU misbehaves; "
                    "report it to NVIDIA with nvidia-bug-report.sh."),
    "nic_link_down": ("NIC link down", "reseat_rma", "Repeated link downs (flaps) on one port: check the cable or "
                      "transceiver and the switch port."),
}
FAILING_KINDS = ("fallen_off_bus", "pcie_aer_fatal", "pcie_aer_uncorrected", "mlx5_fatal")
WARNING_KINDS = ("mlx5_pcie_limited", "nvrm_assert")
KIND_ORDER = ("fallen_off_bus", "sxid", "pcie_aer_fatal", "pcie_aer_uncorrected", "mlx5_fatal", "pcie_aer_corrected",
              "mlx5_pcie_limited", "pcie_limited", "nvrm_assert", "nic_link_down")
# The roles whose uncorrectable AER errors fail (the training path); another device's warn.
TRAINING_PATH_ROLES = ("gpu", "nvswitch", "nic", "bridge")


def unjudged_log(rule: Dict[str, Any], host: str, log: Any, not_checked: str) -> Optional[List[Check]]:
    """The checks of a kernel log that cannot be judged (the XID check's and these): none where the result holds no log, a
    skip with not_checked and the reason where it could not be read; None where it was read."""
    if log is MISSING:
        return []
    if is_unavailable(log):
        return [make_check(rule, host, "skip", "%s: %s" % (not_checked, log["unavailable"]))]
    return None


def log_source(log: Dict[str, Any]) -> str:
    """Where the kernel log was read from and how many lines of it."""
    return "%s, %d lines" % (log.get("source"), log.get("lines_read", 0))


def benign_matchers(rule: Dict[str, Any]) -> Tuple[List[re.Pattern[str]], List[str]]:
    """The compiled benign patterns (built-in, then the user's) and the sentences of those that do not compile."""
    matchers: List[re.Pattern[str]] = []
    problems: List[str] = []
    for name in ("benign_patterns", "extra_benign_patterns"):
        for text in rule["params"][name] or []:
            try:
                matchers.append(re.compile(str(text)))
            except re.error as exc:
                problems.append("%s pattern %r does not compile: %s" % (param_source(rule, name), text, exc))
    return matchers, problems


def _gpus_by_address(data: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    gpus = data.get("gpus")
    found = {}
    for gpu in gpus if isinstance(gpus, list) else []:
        address = dig(gpu, "pci", "bus_id")
        if isinstance(address, str):
            found[address] = gpu
    return found


def _by_device(events: List[Dict[str, Any]]) -> Dict[Any, List[Dict[str, Any]]]:
    grouped: Dict[Any, List[Dict[str, Any]]] = {}
    for event in events:
        grouped.setdefault(event.get("device"), []).append(event)
    return grouped


def _device_words(device: Any, found: List[Dict[str, Any]], gpus: Dict[str, Dict[str, Any]]) -> str:
    name = device if device else "no device named"
    gpu = gpus.get(device) if isinstance(device, str) else None
    if gpu is not None:
        name = "%s (GPU %s)" % (device, gpu.get("index"))
    return "%s x%d, first: %s" % (name, len(found), found[0].get("line", ""))


def _not_recorded(log: Dict[str, Any], kind: str) -> str:
    dropped = (log.get("events_not_recorded") or {}).get(kind)
    return "; %d more line(s) of this kind were counted but not recorded, so not judged" % dropped if dropped else ""


def _kind_status(kind: str, grouped: Dict[Any, List[Dict[str, Any]]], rule: Dict[str, Any],
                 gpus: Dict[str, Dict[str, Any]]) -> Tuple[str, str]:
    """(status, threshold words) of one kind's non-benign events."""
    params = rule["params"]
    if kind in FAILING_KINDS:
        return rule["severity"], "none (fail)"
    if kind == "sxid":
        fatal = any(dig(event, "detail", "fatal") is True for found in grouped.values() for event in found)
        return (rule["severity"] if fatal else "warn"), "no fatal SXID (fail), no non-fatal SXID (warn)"
    if kind in WARNING_KINDS:
        return "warn", "none (warn)"
    if kind == "pcie_limited":
        on_gpu = any(isinstance(device, str) and device in gpus for device in grouped)
        return ("warn" if on_gpu else "pass"), "none on a GPU (warn); other devices are shown"
    if kind == "pcie_aer_corrected":
        limit = params["aer_corrected_warn_above"]
        over = any(len(found) > limit for found in grouped.values())
        return ("warn" if over else "pass"), "<= %s per device in the log (%s)" % (limit, param_source(rule, "aer_corrected_warn_above"))
    limit = params["link_downs_warn_above"]
    over = any(len(found) > limit for found in grouped.values())
    return ("warn" if over else "pass"), "<= %s link downs per interface in the log (%s)" % (limit, param_source(rule, "link_downs_warn_above"))


@reads_params("benign_patterns", "extra_benign_patterns", "aer_corrected_warn_above", "link_downs_warn_above")
def kernel_log_events(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    log = data.get("kernel_log", MISSING)
    unjudged = unjudged_log(rule, host, log, "kernel log not checked beyond XID")
    if unjudged is not None:
        return unjudged
    if "events" not in log:
        return [make_check(rule, host, "skip", "this health result predates the kernel-log classification (no events recorded)")]
    matchers, problems = benign_matchers(rule)
    if problems:
        return [make_check(rule, host, "error", "; ".join(problems))]
    source = log_source(log)
    benign: List[Dict[str, Any]] = []
    judged: List[Dict[str, Any]] = []
    for event in log["events"]:
        if any(matcher.search(event.get("line", "")) for matcher in matchers):
            benign.append(event)
        elif event.get("kind") in KIND_TEXTS:
            judged.append(event)
    gpus = _gpus_by_address(data)
    checks: List[Check] = []
    for kind in KIND_ORDER:
        grouped = _by_device([event for event in judged if event.get("kind") == kind])
        if not grouped:
            continue
        words, action, remedy = KIND_TEXTS[kind]
        status, threshold = _kind_status(kind, grouped, rule, gpus)
        devices = sorted(grouped, key=lambda device: (-len(grouped[device]), str(device)))
        reason = "%s in the kernel log (%s): %s%s" % (words, source, "; ".join(
            _device_words(device, grouped[device], gpus) for device in devices), _not_recorded(log, kind))
        if kind == "fallen_off_bus":
            reason += _xid_79_words(log, devices)
        gpu = gpus.get(devices[0]) if len(devices) == 1 and isinstance(devices[0], str) else None
        checks.append(make_check(rule, host, status, reason, gpu, value=[str(device) for device in devices],
                                 threshold=threshold, action=action, remedy=remedy))
    if benign:
        grouped = _by_device(benign)
        checks.append(make_check(rule, host, "pass", "benign kernel-log lines (matched a benign pattern; never judged): %s" % "; ".join(
            "%s %s" % (kind_of(grouped[device]), _device_words(device, grouped[device], gpus)) for device in sorted(grouped, key=str)),
            value=len(benign), threshold="benign lines are shown, never fail"))
    if not checks:
        checks.append(make_check(rule, host, "pass", "no SXID, fallen-off-the-bus, PCIe AER, NIC link, PCIe-limited or NVRM "
                                 "assertion line in the kernel log (%s)" % source, value=[], threshold="none"))
    return checks


def kind_of(events: List[Dict[str, Any]]) -> str:
    return "/".join(sorted(set(str(event.get("kind")) for event in events)))


def _xid_79_words(log: Dict[str, Any], devices: List[Any]) -> str:
    with_xid = {event.get("pci_bus_id") for event in log.get("xid_events") or [] if event.get("xid") == 79}
    without = [str(device) for device in devices if device not in with_xid]
    if not without:
        return " (XID 79 was logged for it too)"
    return " (no XID 79 logged for %s: the driver said so only in this line)" % ", ".join(without)


def _aer_part(device: Dict[str, Any], key: str) -> Optional[int]:
    part = device.get(key)
    return part.get("total") if isinstance(part, dict) and isinstance(part.get("total"), int) else None


@reads_params("corrected_warn_above")
def pcie_aer_counters(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    aer = data.get("pcie_aer", MISSING)
    if aer is MISSING:
        if "kernel_log" in data:
            return [make_check(rule, host, "skip", "this health result predates the PCIe AER reading (no pcie_aer recorded)")]
        return []
    if is_unavailable(aer):
        return [make_check(rule, host, "skip", "PCIe AER counters not checked: %s" % aer["unavailable"])]
    limit = rule["params"]["corrected_warn_above"]
    threshold = "no uncorrectable error on a GPU, NVSwitch, NIC or their bridges (fail; other devices warn); corrected <= %s per device (%s)" % (
        limit, param_source(rule, "corrected_warn_above"))
    gpus = _gpus_by_address(data)
    checks: List[Check] = []
    for device in aer.get("devices") or []:
        address = device.get("pci_address")
        role = device.get("role")
        totals = {key: _aer_part(device, key) for key in ("correctable", "nonfatal", "fatal")}
        uncorrectable = (totals["nonfatal"] or 0) + (totals["fatal"] or 0)
        corrected = totals["correctable"] or 0
        if not uncorrectable and corrected <= limit:
            continue
        name = "%s (%s%s)" % (address, role, " above a %s" % device["below"] if device.get("below") else "")
        counters = "; ".join("%s: %s" % (key, ", ".join("%s %d" % item for item in sorted((device.get(key) or {}).get("counters", {}).items())))
                             for key in ("fatal", "nonfatal", "correctable") if (device.get(key) or {}).get("counters"))
        if uncorrectable:
            status = rule["severity"] if role in TRAINING_PATH_ROLES else "warn"
            reason = "%s: %d uncorrectable PCIe error(s) since boot (fatal %s, non-fatal %s)" % (
                name, uncorrectable, totals["fatal"], totals["nonfatal"])
        else:
            status = "warn"
            reason = "%s: %d corrected PCIe errors since boot, above %s" % (name, corrected, limit)
        checks.append(make_check(rule, host, status, "%s%s" % (reason, " [%s]" % counters if counters else ""), gpus.get(address),
                                 value=uncorrectable or corrected, threshold=threshold, action="reseat_rma"))
    if not checks:
        checks.append(make_check(rule, host, "pass", "no uncorrectable PCIe error and no device above %s corrected errors since boot "
                                 "(%d devices listed of %s with AER statistics)" % (limit, len(aer.get("devices") or []), aer.get("devices_with_aer")),
                                 value=len(aer.get("devices") or []), threshold=threshold))
    return checks


KERNEL_LOG_CHECKS: Dict[str, CheckFunction] = {
    "kernel_log_events": kernel_log_events,
    "pcie_aer_counters": pcie_aer_counters,
}
