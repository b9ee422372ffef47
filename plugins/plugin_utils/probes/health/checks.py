# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health probe's check functions: HEALTH_CHECKS maps a rule's "check" name to a function.

Each function is (host, data, rule, context) -> List[Check]: data is the health envelope's "data", rule the
effective rule (id, severity, params ...), context a rules.RuleContext. A function returns no check when the
field it reads is absent (the judge then reports the rule as matching nothing); an {"unavailable": reason}
field gives a "skip" check when the platform does not offer it (NVML "Not Supported") and an "error" check
when it should have been readable. The primary violation gets the rule's severity; softer findings "warn".
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ...probe_kit.kit import (
    process_words, CheckFunction, format_quantity, MISSING, dig, is_unavailable, gpu_label, make_check, param_source,
    reads_params, unavailable_check, Check)
from .kernel_log_checks import log_source, unjudged_log
from .machine_checks import MACHINE_CHECKS

# REFERENCE.md: the XIDs node health checks (aznhc, gcm, NHC) treat as hardware faults.
HARDWARE_XIDS = (48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 94, 95, 119, 120)
# Short meanings of common XIDs (NVIDIA's XID catalogue), for the sentences.
XID_MEANINGS = {
    13: "graphics engine exception", 31: "GPU memory page fault", 43: "GPU stopped processing",
    45: "preemptive cleanup after a previous error", 48: "double-bit ECC error", 61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt", 63: "ECC page retirement or row remapping recorded",
    64: "ECC page retirement or row remapping failure", 68: "video processor exception", 69: "graphics engine class error",
    74: "NVLink error", 79: "GPU has fallen off the bus", 92: "high single-bit ECC error rate",
    94: "contained ECC error", 95: "uncontained ECC error", 119: "GSP RPC timeout", 120: "GSP error",
}
DEFAULT_ALLOWED_CLOCK_EVENT_REASONS = ("gpu_idle", "sw_power_cap", "applications_clocks_setting")
DEFAULT_FAIL_CLOCK_EVENT_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown", "hw_power_brake_slowdown")
PCIE_IDLE_NOTE = ("idle GPUs lower the PCIe link speed to save power, so a lower gen at idle is expected; "
                  "re-check under load (the load probe) before acting")


def per_gpu(host: str, data: Dict[str, Any], rule: Dict[str, Any], what: str,
            judge: Callable[[Dict[str, Any]], Optional[Check]]) -> List[Check]:
    """Run judge on every readable GPU; a GPU that could not be read gives an error check; no GPU list gives one check."""
    gpus = data.get("gpus", MISSING)
    if gpus is MISSING:
        return []
    if is_unavailable(gpus):
        return [unavailable_check(rule, host, "the GPU list (needed for %s)" % what, gpus)]
    checks = []
    for gpu in gpus:
        if "error" in gpu and "uuid" not in gpu:
            checks.append(make_check(rule, host, "error", "GPU %s could not be read, so %s is unknown: %s"
                                     % (gpu.get("index"), what, gpu["error"]), gpu))
            continue
        check = judge(gpu)
        if check is not None:
            checks.append(check)
    return checks


# ---------------------------------------------------------------------------------------------- host-level


def device_majors(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """The majors as found, before NVML or CUDA could repair them; a node that changed while the probe ran is named."""
    nodes = data.get("device_nodes", MISSING)
    if nodes is MISSING:
        return []
    if is_unavailable(nodes):
        return [unavailable_check(rule, host, "the /dev/nvidia* device nodes", nodes, status="error")]
    majors = nodes.get("proc_devices_nvidia_majors")
    if is_unavailable(majors):
        return [unavailable_check(rule, host, "/proc/devices", majors, status="error")]
    mismatches = nodes.get("mismatches", MISSING)
    if mismatches is MISSING:
        return []
    checked = len([node for node in nodes.get("nodes", []) if node.get("major_matches") is not None])
    changes = node_changes_during_probe(nodes)
    fields = {"reference": majors, "reference_source": "/proc/devices on the host",
              "threshold": "every node's major == its driver's major"}
    if mismatches:
        sentences = [entry["sentence"] for entry in mismatches] + [change["sentence"] for change in changes]
        return [make_check(rule, host, rule["severity"], "; ".join(sentences),
                           value=[entry["path"] for entry in mismatches], **fields)]
    if changes:
        return [make_check(rule, host, "warn", "every /dev/nvidia* major (%d nodes) matched /proc/devices when the probe "
                           "started, but %s" % (checked, "; ".join(change["sentence"] for change in changes)),
                           value=[change["path"] for change in changes], **fields)]
    return [make_check(rule, host, "pass", "every /dev/nvidia* major (%d nodes) matches /proc/devices" % checked,
                       value=[], **fields)]


def node_changes_during_probe(nodes: Dict[str, Any]) -> List[Dict[str, Any]]:
    """device_nodes.after_init.changes: nodes NVML/CUDA initialisation created or re-created; [] when not recorded."""
    changes = dig(nodes, "after_init", "changes")
    return changes if isinstance(changes, list) else []


def device_nodes_present(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    missing = dig(data, "device_nodes", "missing_nodes")
    if missing is MISSING:
        return []
    if is_unavailable(missing):
        return [unavailable_check(rule, host, "the /dev/nvidia* device nodes", missing, status="error")]
    if missing:
        return [make_check(rule, host, rule["severity"], "; ".join(entry["sentence"] for entry in missing),
                           value=[entry["path"] for entry in missing], threshold="none missing")]
    return [make_check(rule, host, "pass", "/dev/nvidiactl and /dev/nvidia-uvm exist where their drivers are registered",
                       value=[], threshold="none missing")]


def device_nodes_open(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    nodes = dig(data, "device_nodes", "nodes")
    if nodes is MISSING:
        return []
    if is_unavailable(nodes):
        return [unavailable_check(rule, host, "the /dev/nvidia* device nodes", nodes, status="error")]
    tried = [node for node in nodes if "open_rw" in node]
    if not tried:
        return [make_check(rule, host, "skip", "no /dev/nvidia* node was opened (the probe's device_open_test was off, "
                           "or there are no nodes)")]
    denied = [node for node in tried if node["open_rw"] != "ok"]
    if denied:
        return [make_check(rule, host, rule["severity"], "; ".join(
            "%s cannot be opened read-write (%s): a container or cgroup device rule denies it, or its permissions do"
            % (node["path"], node["open_rw"]) for node in denied),
            value=["%s: %s" % (node["path"], node["open_rw"]) for node in denied], threshold="every node opens read-write")]
    return [make_check(rule, host, "pass", "all %d /dev/nvidia* nodes open read-write" % len(tried), value=[],
                       threshold="every node opens read-write")]


def device_node_count(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    nodes = data.get("device_nodes", MISSING)
    if nodes is MISSING:
        return []
    if is_unavailable(nodes):
        return [unavailable_check(rule, host, "the /dev/nvidia* device nodes", nodes, status="error")]
    if "gpu_node_count" not in nodes:
        return []
    count, nvml = nodes["gpu_node_count"], nodes.get("nvml_gpu_count")
    if is_unavailable(nvml) or nvml is None:
        field_value = nvml if is_unavailable(nvml) else {"unavailable": "NVML's GPU count is not recorded"}
        return [unavailable_check(rule, host, "NVML's GPU count (to compare with %d /dev/nvidiaN nodes)" % count, field_value,
                                  status="error")]
    fields = {"value": count, "unit": "nodes", "reference": nvml, "reference_source": "NVML device count", "threshold": "== NVML count"}
    if count == nvml:
        return [make_check(rule, host, "pass", "%d /dev/nvidiaN nodes for %d NVML GPUs" % (count, nvml), **fields)]
    return [make_check(rule, host, rule["severity"], "%d /dev/nvidiaN nodes but NVML sees %d GPUs: the device nodes do not match "
                       "the GPUs (stale nodes, or nodes not passed into the container)" % (count, nvml), **fields)]


def cuda_init(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    init = data.get("cuda_init", MISSING)
    if init is MISSING:
        return []
    if is_unavailable(init):
        return [make_check(rule, host, "error", "could not tell whether CUDA initialises: %s" % init["unavailable"])]
    duration = init.get("duration_s")
    duration = duration if isinstance(duration, (int, float)) else None
    if init.get("ok"):
        checks = [make_check(rule, host, "pass", "CUDA initialised in a fresh process and wrote/read every GPU (%s devices)"
                             % init.get("device_count"), value=duration, unit="s", threshold="initialises")]
    else:
        error = init.get("error") or {}
        parts = [init.get("reason") or "CUDA did not initialise"]
        if error.get("message") and error["message"] not in parts[0]:
            parts.append("%s: %s" % (error.get("type", "error"), error["message"]))
        if init.get("timed_out"):
            parts.append("timed out after %s" % format_quantity(init.get("timeout_s"), "s"))
        hidden = _hidden_gpus(data, init)
        if hidden:
            parts.insert(0, hidden)
        checks = [make_check(rule, host, rule["severity"], "CUDA init failed at stage %s: %s" % (init.get("stage"), "; ".join(parts)),
                             value=duration, unit="s", threshold="initialises")]
    devices = init.get("devices")
    if isinstance(devices, list):
        for device in devices:
            if not device.get("ok"):
                error = device.get("error") or {}
                gpu = {"index": device.get("index"), "uuid": device.get("uuid")}
                checks.append(make_check(rule, host, rule["severity"], "%s: CUDA could not write and read it back: %s" % (
                    gpu_label(gpu), error.get("message") or "no error recorded"), gpu, value=device.get("duration_s"), unit="s"))
    return checks


def _hidden_gpus(data: Dict[str, Any], init: Dict[str, Any]) -> str:
    """The NVML/CUDA mismatch in words when NVML lists GPUs and CUDA saw none, else ""."""
    gpus = data.get("gpus")
    listed = len(gpus) if isinstance(gpus, list) else 0
    count = init.get("device_count")
    if not listed or (isinstance(count, int) and count > 0):
        return ""
    return "NVML lists %d GPU(s) but CUDA sees none" % listed


def xid_events(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    log = data.get("kernel_log", MISSING)
    unjudged = unjudged_log(rule, host, log, "XID events not checked")
    if unjudged is not None:
        return unjudged
    hardware = set(rule["params"].get("hardware_xids") or [])
    events = log.get("xid_events") or []
    gpus = data.get("gpus")
    indexes = [gpu.get("index") for gpu in gpus] if isinstance(gpus, list) else []
    threshold = "no hardware XID (fail), no other XID (warn)"
    source = log_source(log)

    def judge(gpu: Optional[Dict[str, Any]], found: List[Dict[str, Any]]) -> Check:
        prefix = "%s: " % gpu_label(gpu) if gpu is not None else ""
        if not found:
            return make_check(rule, host, "pass", "%sno XID in the kernel log (%s)" % (prefix, source), gpu, value=[], threshold=threshold)
        counts: Dict[int, int] = {}
        for event in found:
            counts[event["xid"]] = counts.get(event["xid"], 0) + 1
        words = []
        for xid in sorted(counts):
            kind = "hardware" if xid in hardware else "software or application"
            meaning = XID_MEANINGS.get(xid)
            words.append("XID %d x%d (%s%s)" % (xid, counts[xid], kind, ": " + meaning if meaning else ""))
        status = rule["severity"] if any(xid in hardware for xid in counts) else "warn"
        return make_check(rule, host, status, "%s%s in the kernel log (%s); last: %s" % (
            prefix, ", ".join(words), source, found[-1].get("message", "")[:160]), gpu, value=sorted(counts), threshold=threshold)

    checks = []
    for gpu in gpus if isinstance(gpus, list) else []:
        if isinstance(gpu.get("index"), int):
            checks.append(judge(gpu, [event for event in events if event.get("gpu_index") == gpu["index"]]))
    unattributed = [event for event in events if event.get("gpu_index") not in indexes or event.get("gpu_index") is None]
    if unattributed or not checks:
        check = judge(None, unattributed)
        if unattributed:
            check.reason = "not attributable to a listed GPU (PCI %s): %s" % (
                ", ".join(sorted(set(event.get("pci_bus_id", "?") for event in unattributed))), check.reason)
        checks.append(check)
    return checks


# ---------------------------------------------------------------------------------------------- per GPU


def ecc_enabled(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        mode = dig(gpu, "ecc", "mode_current")
        if mode is MISSING:
            return None
        if is_unavailable(mode):
            return unavailable_check(rule, host, "ECC mode", mode, gpu)
        pending = dig(gpu, "ecc", "mode_pending")
        fields = {"value": mode, "reference": "enabled", "threshold": "== enabled"}
        if mode == "enabled":
            if pending == "disabled":
                return make_check(rule, host, "warn", "%s: ECC is enabled but set to be disabled at the next reset" % gpu_label(gpu), gpu, **fields)
            return make_check(rule, host, "pass", "%s: ECC enabled" % gpu_label(gpu), gpu, **fields)
        note = " (pending: enabled at the next reset)" if pending == "enabled" else ""
        return make_check(rule, host, rule["severity"], "%s: ECC is %s%s; enable it (nvidia-smi -i %s -e 1) and reset the GPU"
                          % (gpu_label(gpu), mode, note, gpu.get("index")), gpu, **fields)
    return per_gpu(host, data, rule, "the ECC mode", judge)


@reads_params("max")
def ecc_volatile_uncorrected(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    limit = rule["params"]["max"]

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        count = dig(gpu, "ecc", "volatile_uncorrected_count")
        if count is MISSING:
            return None
        if is_unavailable(count):
            return unavailable_check(rule, host, "the volatile uncorrectable ECC count", count, gpu)
        fields = {"value": count, "unit": "errors", "reference": limit, "reference_source": param_source(rule, "max"),
                  "threshold": "<= %d" % limit}
        if count <= limit:
            return make_check(rule, host, "pass", "%s: %d volatile uncorrectable ECC errors" % (gpu_label(gpu), count), gpu, **fields)
        return make_check(rule, host, rule["severity"], "%s: %d volatile uncorrectable ECC errors since the last driver load; drain the "
                          "node and reset the GPU, replace it if they recur" % (gpu_label(gpu), count), gpu, **fields)
    return per_gpu(host, data, rule, "the uncorrectable ECC count", judge)


@reads_params("warn_at", "fail_at")
def retired_pages(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    warn_at, fail_at = rule["params"]["warn_at"], rule["params"]["fail_at"]
    threshold = "< %d (warn at %d, fail at %d or pending; DCGM's limits)" % (warn_at, warn_at, fail_at)

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        pages = gpu.get("retired_pages", MISSING)
        if pages is MISSING:
            return None
        if is_unavailable(pages):
            check = unavailable_check(rule, host, "page retirement", pages, gpu)
            if check.status == "skip":
                check.reason += " (this GPU remaps rows instead; see health.remapped_rows)"
            return check
        counts = [pages.get("single_bit_ecc_count"), pages.get("double_bit_ecc_count")]
        if any(is_unavailable(count) for count in counts):
            return unavailable_check(rule, host, "the retired page count", [c for c in counts if is_unavailable(c)][0], gpu)
        total = sum(count or 0 for count in counts)
        pending = pages.get("pending")
        fields = {"value": total, "unit": "pages", "reference": fail_at, "reference_source": param_source(rule, "fail_at"),
                  "threshold": threshold}
        if pending is True:
            return make_check(rule, host, rule["severity"], "%s: a page retirement is pending (%d retired): reset the GPU to apply it"
                              % (gpu_label(gpu), total), gpu, **fields)
        if total >= fail_at:
            return make_check(rule, host, rule["severity"], "%s: %d retired pages, at or above %d: replace the GPU" % (
                gpu_label(gpu), total, fail_at), gpu, **fields)
        if total >= warn_at:
            return make_check(rule, host, "warn", "%s: %d retired pages, at or above %d: watch it" % (gpu_label(gpu), total, warn_at), gpu, **fields)
        return make_check(rule, host, "pass", "%s: %d retired pages" % (gpu_label(gpu), total), gpu, **fields)
    return per_gpu(host, data, rule, "page retirement", judge)


@reads_params("uncorrectable_fail_at")
def remapped_rows(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    fail_at = rule["params"]["uncorrectable_fail_at"]
    threshold = "not pending, no failure, uncorrectable < %d" % fail_at

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        rows = gpu.get("remapped_rows", MISSING)
        if rows is MISSING:
            return None
        if is_unavailable(rows):
            return unavailable_check(rule, host, "row remapping", rows, gpu)
        uncorrectable = rows.get("uncorrectable_count", 0)
        fields = {"value": uncorrectable, "unit": "rows", "reference": fail_at,
                  "reference_source": param_source(rule, "uncorrectable_fail_at"), "threshold": threshold}
        problems = []
        if rows.get("failure"):
            problems.append("a row remapping failed (no spare rows left): replace the GPU")
        if rows.get("pending"):
            problems.append("a row remapping is pending: reset the GPU to apply it")
        if uncorrectable >= fail_at:
            problems.append("%d rows remapped for uncorrectable errors, at or above %d: replace the GPU" % (uncorrectable, fail_at))
        if problems:
            return make_check(rule, host, rule["severity"], "%s: %s" % (gpu_label(gpu), "; ".join(problems)), gpu, **fields)
        return make_check(rule, host, "pass", "%s: %d correctable and %d uncorrectable remapped rows, none pending" % (
            gpu_label(gpu), rows.get("correctable_count", 0), uncorrectable), gpu, **fields)
    return per_gpu(host, data, rule, "row remapping", judge)


def _pcie_pair(rule: Dict[str, Any], host: str, gpu: Dict[str, Any], names: Tuple[str, str], what: str) -> Tuple[Any, Optional[Check]]:
    """(current, maximum) of a GPU's PCIe link fields, else (None, the check to return: none where a field is missing,
    unavailable where one could not be read)."""
    values = [dig(gpu, "pcie", name) for name in names]
    if any(value is MISSING for value in values):
        return None, None
    for value in values:
        if is_unavailable(value):
            return None, unavailable_check(rule, host, what, value, gpu)
    return tuple(values), None


def pcie_link_width(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    baseline = getattr(context, "baseline", None)
    expected = (baseline or {}).get("pcie", {}).get("width")

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        pair, unread = _pcie_pair(rule, host, gpu, ("current_link_width", "max_link_width"), "the PCIe link width")
        if pair is None:
            return unread
        current, maximum = pair
        fields = {"value": current, "unit": "lanes", "reference": maximum, "reference_source": "NVML max link width",
                  "threshold": ">= max width"}
        if current < maximum:
            return make_check(rule, host, rule["severity"], "%s: PCIe link x%d of x%d: lanes are down (reseat the GPU or riser, "
                              "check the slot)" % (gpu_label(gpu), current, maximum), gpu, **fields)
        if expected and maximum < expected:
            fields.update(reference=expected, reference_source=context.baseline_source("pcie.width"))
            return make_check(rule, host, "warn", "%s: PCIe link x%d, the most this slot offers, below the x%d of %s" % (
                gpu_label(gpu), current, expected, context.baseline.get("id")), gpu, **fields)
        return make_check(rule, host, "pass", "%s: PCIe link x%d of x%d" % (gpu_label(gpu), current, maximum), gpu, **fields)
    return per_gpu(host, data, rule, "the PCIe link width", judge)


def pcie_link_gen(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        pair, unread = _pcie_pair(rule, host, gpu, ("current_link_gen", "max_link_gen"), "the PCIe link generation")
        if pair is None:
            return unread
        current, maximum = pair
        gpu_max = dig(gpu, "pcie", "gpu_max_link_gen")
        fields = {"value": current, "unit": "PCIe gen", "reference": maximum, "reference_source": "NVML max link gen",
                  "threshold": ">= max gen"}
        if current < maximum:
            return make_check(rule, host, rule["severity"], "%s: PCIe Gen %d of max Gen %d; %s" % (
                gpu_label(gpu), current, maximum, PCIE_IDLE_NOTE), gpu, **fields)
        if isinstance(gpu_max, int) and maximum < gpu_max:
            fields.update(reference=gpu_max, reference_source="NVML GPU max link gen")
            return make_check(rule, host, rule["severity"], "%s: the link trains at Gen %d at most although the GPU supports Gen %d: "
                              "the slot, riser or BIOS setting caps it" % (gpu_label(gpu), maximum, gpu_max), gpu, **fields)
        return make_check(rule, host, "pass", "%s: PCIe Gen %d of Gen %d" % (gpu_label(gpu), current, maximum), gpu, **fields)
    return per_gpu(host, data, rule, "the PCIe link generation", judge)


def _nvlink_words(nvlink: Dict[str, Any]) -> str:
    if is_unavailable(nvlink):
        return "NVLink state unreadable (%s)" % nvlink["unavailable"]
    queried, unsupported = nvlink.get("links_queried"), nvlink.get("not_supported_count")
    supported = nvlink.get("supported_count", 0)
    if isinstance(queried, int) and isinstance(unsupported, int) and unsupported and not supported:
        return "NVML answers Not Supported for every one of the %d link indices it was asked (no NVLink here)" % queried
    return "NVML reports %d supported NVLinks" % supported


def _none_supported(nvlink: Any) -> bool:
    """NVML answered Not Supported for every link index it was asked."""
    if is_unavailable(nvlink):
        return "not supported" in nvlink["unavailable"].lower()
    queried, unsupported = nvlink.get("links_queried"), nvlink.get("not_supported_count")
    return isinstance(queried, int) and queried > 0 and unsupported == queried and not nvlink.get("supported_count")


def nvlink_active(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Active NVLinks per GPU, where the host is expected to have GPU peers to link to.

    A host expected to have one GPU (a VM or container given one SXM GPU) has no peer, so its links are a skip with
    what NVML reports; a multi-GPU host of an NVLink SKU fails with any link down or missing.
    """
    baseline = getattr(context, "baseline", None)
    expected = rule["params"].get("expected")
    source = param_source(rule, "expected")
    if expected is None and baseline and baseline.get("nvlink_links") is not None:
        expected, source = baseline["nvlink_links"], context.baseline_source("nvlink_links")
    gpus = data.get("gpus")
    host_gpus = getattr(context, "expected_gpus", None)
    host_gpus_source = getattr(context, "expected_gpus_source", "")
    if host_gpus is None and isinstance(gpus, list):
        host_gpus, host_gpus_source = len(gpus), "the GPUs NVML lists (no expected count is set)"

    shape = getattr(context, "machine", None)
    nvswitches = dig(data, "machine", "pci_nvswitch_count")
    # a VM given NVSwitches has a fabric to reach: there an NVML that offers no link is a finding, not the hypervisor
    in_vm = getattr(shape, "in_vm", False) and not (isinstance(nvswitches, int) and nvswitches > 0)

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        nvlink = gpu.get("nvlink", MISSING)
        if nvlink is MISSING:
            return None
        if in_vm and _none_supported(nvlink):
            words = "%s: %s, in a virtual machine (%s): the hypervisor does not expose NVLink to this guest, so the links are " \
                "not judged here" % (gpu_label(gpu), _nvlink_words(nvlink), shape.platform_evidence)
            return make_check(rule, host, "skip", words, gpu, unit="links")
        if is_unavailable(nvlink) and expected == 0:
            return make_check(rule, host, "pass", "%s: no NVLink, as expected (%s: 0)" % (gpu_label(gpu), source), gpu,
                              value=0, unit="links", reference=0, reference_source=source, threshold="== 0")
        if isinstance(host_gpus, int) and host_gpus < 2:
            active = None if is_unavailable(nvlink) else nvlink.get("active_count", 0)
            words = "%s: %s%s; not judged: this host should have %d GPU (%s), so no NVLink has a GPU peer to reach" % (
                gpu_label(gpu), "" if active is None else "%d active NVLinks, " % active, _nvlink_words(nvlink), host_gpus,
                host_gpus_source)
            return make_check(rule, host, "skip", words, gpu, value=active, unit="links")
        if is_unavailable(nvlink):
            return unavailable_check(rule, host, "NVLink state", nvlink, gpu)
        active, supported = nvlink.get("active_count", 0), nvlink.get("supported_count", 0)
        want, want_source, note = expected, source, ""
        if want is None:
            want, want_source = supported, "the GPU's own supported link count (NVML)"
            note = " (the SKU is unknown, so compared with the GPU's own supported count)"
        fields = {"value": active, "unit": "links", "reference": want, "reference_source": want_source, "threshold": ">= %d" % want}
        if active >= want:
            return make_check(rule, host, "pass", "%s: %d of %d NVLinks active%s" % (gpu_label(gpu), active, want, note), gpu, **fields)
        inactive = [link.get("link") for link in nvlink.get("links", []) if link.get("state") != "active"]
        listed = " (inactive: %s)" % ", ".join(str(link) for link in inactive) if inactive else ""
        return make_check(rule, host, rule["severity"], "%s: %d of %d NVLinks active%s%s; %s; this host should have %s GPUs (%s): "
                          "inactive links cut P2P and collective bandwidth: check the fabric manager and the board"
                          % (gpu_label(gpu), active, want, listed, note, _nvlink_words(nvlink), host_gpus, host_gpus_source),
                          gpu, **fields)
    return per_gpu(host, data, rule, "the NVLink state", judge)


def power_limit(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """The enforced power limit is the GPU's default (or params.min_w): a lowered limit is a configuration finding, and
    every rate measured under it is lower for that reason, not because the GPU is slow."""
    minimum = rule["params"].get("min_w")
    baseline = getattr(context, "baseline", None) or {}
    datasheet = ((baseline.get("datasheet") or {}).get("power") or {}).get("value")

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        power = gpu.get("power", MISSING)
        if power is MISSING:
            return None
        if is_unavailable(power):
            return unavailable_check(rule, host, "the power limit", power, gpu)
        enforced = power.get("enforced_limit_w", power.get("limit_w"))
        if enforced is None:
            return None
        if is_unavailable(enforced):
            return unavailable_check(rule, host, "the enforced power limit", enforced, gpu)
        if minimum is not None:
            wanted, wanted_source = float(minimum), param_source(rule, "min_w")
        elif isinstance(power.get("default_limit_w"), (int, float)):
            wanted, wanted_source = float(power["default_limit_w"]), "NVML default power limit of this GPU"
        else:
            return make_check(rule, host, "skip", "%s: power limit %s; neither NVML's default limit nor params.min_w is known"
                              % (gpu_label(gpu), format_quantity(enforced, "W")), gpu, value=enforced, unit="W")
        fields = {"value": enforced, "unit": "W", "reference": wanted, "reference_source": wanted_source, "threshold": ">= %g W" % wanted}
        of_sku = " (the SKU's datasheet: %s)" % format_quantity(datasheet, "W") if isinstance(datasheet, (int, float)) else ""
        if enforced >= wanted - 0.5:
            return make_check(rule, host, "pass", "%s: power limit %s, at its %s default%s" % (
                gpu_label(gpu), format_quantity(enforced, "W"), format_quantity(wanted, "W"), of_sku), gpu, **fields)
        return make_check(rule, host, rule["severity"], "%s: power limit %s is below the %s %s%s: a configuration finding "
                          "(nvidia-smi -pl, a DCGM or BMC power policy, a data-centre cap), not a slow GPU; every rate measured "
                          "under it is lower for that reason. Restore the default, or set params.min_w for a deliberate cap"
                          % (gpu_label(gpu), format_quantity(enforced, "W"), format_quantity(wanted, "W"),
                             "set by params.min_w" if minimum is not None else "default", of_sku),
                          gpu, **fields)
    return per_gpu(host, data, rule, "the power limit", judge)


def clock_event_reasons(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    allowed = set(rule["params"].get("allowed_reasons") or DEFAULT_ALLOWED_CLOCK_EVENT_REASONS)
    failing = set(rule["params"].get("fail_reasons") or DEFAULT_FAIL_CLOCK_EVENT_REASONS)
    threshold = "only %s" % ", ".join(sorted(allowed))

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        reasons = gpu.get("clock_event_reasons", MISSING)
        if reasons is MISSING:
            return None
        if is_unavailable(reasons):
            return unavailable_check(rule, host, "clock-event (throttle) reasons", reasons, gpu)
        names = list(reasons.get("names") or [])
        others = [name for name in names if name not in allowed]
        fields = {"value": names, "reference": sorted(allowed), "reference_source": param_source(rule, "allowed_reasons"),
                  "threshold": threshold}
        if not others:
            return make_check(rule, host, "pass", "%s: clock-event reasons %s" % (gpu_label(gpu), ", ".join(names) or "none"), gpu, **fields)
        bad = [name for name in others if name in failing]
        status = rule["severity"] if bad else "warn"
        return make_check(rule, host, status, "%s: clocks held down by %s (%s): %s" % (
            gpu_label(gpu), ", ".join(others), reasons.get("mask_hex", ""),
            "a thermal, power-brake or hardware slowdown: check cooling, power and the board" if bad else "not idle or the power cap"),
            gpu, **fields)
    return per_gpu(host, data, rule, "the clock-event reasons", judge)


def persistence_mode(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        mode = gpu.get("persistence_mode", MISSING)
        if mode is MISSING:
            return None
        if is_unavailable(mode):
            return unavailable_check(rule, host, "persistence mode", mode, gpu)
        fields = {"value": mode, "reference": "enabled", "threshold": "== enabled"}
        if mode == "enabled":
            return make_check(rule, host, "pass", "%s: persistence mode enabled" % gpu_label(gpu), gpu, **fields)
        return make_check(rule, host, rule["severity"], "%s: persistence mode is %s: the driver tears the GPU state down between "
                          "programs (slow first init, state lost); run nvidia-persistenced" % (gpu_label(gpu), mode), gpu, **fields)
    return per_gpu(host, data, rule, "persistence mode", judge)


def gpu_processes(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    allowed = set(rule["params"].get("allowed_process_names") or [])

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        compute = dig(gpu, "processes", "compute")
        if compute is MISSING:
            return None
        if is_unavailable(compute):
            return unavailable_check(rule, host, "the GPU's compute processes", compute, gpu)
        unexpected = []
        for process in compute:
            name = process.get("name")
            name = name if isinstance(name, str) else "<name unreadable>"
            if name not in allowed and name.rsplit("/", 1)[-1] not in allowed:
                unexpected.append(process_words(process))
        fields = {"value": unexpected, "reference": sorted(allowed), "reference_source": param_source(rule, "allowed_process_names"),
                  "threshold": "no compute process outside allowed_process_names"}
        if unexpected:
            words = "%s: busy: %d compute process(es) of another job on the GPU: %s; measurements there share it, so they are " \
                "not validated" % (gpu_label(gpu), len(unexpected), ", ".join(unexpected))
            return make_check(rule, host, rule["severity"], words, gpu, **fields)
        return make_check(rule, host, "pass", "%s: no unexpected compute process" % gpu_label(gpu), gpu, **fields)
    return per_gpu(host, data, rule, "the GPU's processes", judge)


def field_equals(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Generic: params.path ("a.b.c", or "gpus[].a.b" for every GPU) must equal params.expected (or be one of a list)."""
    path = str(rule["params"].get("path") or "")
    expected = rule["params"].get("expected")
    accepted = expected if isinstance(expected, list) else [expected]
    threshold = "== %s" % expected if not isinstance(expected, list) else "one of %s" % ", ".join(map(str, expected))

    def judge_value(value: Any, gpu: Optional[Dict[str, Any]]) -> Optional[Check]:
        if value is MISSING:
            return None
        if is_unavailable(value):
            return unavailable_check(rule, host, path, value, gpu)
        prefix = "%s: " % gpu_label(gpu) if gpu is not None else ""
        fields = {"value": value, "reference": expected, "reference_source": param_source(rule, "expected"), "threshold": threshold}
        if value in accepted:
            return make_check(rule, host, "pass", "%s%s is %s" % (prefix, path, value), gpu, **fields)
        return make_check(rule, host, rule["severity"], "%s%s is %s, expected %s" % (prefix, path, value, threshold), gpu, **fields)

    if path.startswith("gpus[]."):
        keys = path[len("gpus[]."):].split(".")
        return per_gpu(host, data, rule, path, lambda gpu: judge_value(dig(gpu, *keys), gpu))
    check = judge_value(dig(data, *path.split(".")), None) if path else None
    return [check] if check is not None else []


HEALTH_CHECKS: Dict[str, CheckFunction] = {
    **MACHINE_CHECKS,
    "ecc_enabled": ecc_enabled,
    "ecc_volatile_uncorrected": ecc_volatile_uncorrected,
    "retired_pages": retired_pages,
    "remapped_rows": remapped_rows,
    "pcie_link_width": pcie_link_width,
    "pcie_link_gen": pcie_link_gen,
    "nvlink_active": nvlink_active,
    "power_limit": power_limit,
    "clock_event_reasons": clock_event_reasons,
    "persistence_mode": persistence_mode,
    "xid_events": xid_events,
    "device_majors": device_majors,
    "device_nodes_present": device_nodes_present,
    "device_nodes_open": device_nodes_open,
    "device_node_count": device_node_count,
    "cuda_init": cuda_init,
    "gpu_processes": gpu_processes,
    "field_equals": field_equals,
}
