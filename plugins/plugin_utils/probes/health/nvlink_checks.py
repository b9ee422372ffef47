# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health probe's NVLink error counter and NVSwitch fabric checks: NVLINK_CHECKS maps a rule's "check" name to one.

The counters count since the driver loaded, so one run alone tells only whether a link ever erred; whether it still
errs is the rise between this run and the host's previous one (RuleContext.earlier_envelopes), judged as DCGM's health
watch judges its window: any replay or recovery error fails, CRC errors fail at a rate (per second), a slower rise warns.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ...probe_kit.kit import (
    CheckFunction, gpu_label, make_check, param_source, reads_params, unavailable_check, Check, MISSING, dig,
    is_unavailable, start_interval)
from .checks import _none_supported, _nvlink_words, per_gpu

# (counter, words): a rise of any of these fails (DCGM_FR_NVLINK_ERROR_CRITICAL)
FATAL_COUNTERS = (("replay", "replay"), ("recovery", "recovery"))
# judged as a rate: fail at crc_rate_fail_per_s, warn below it (DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD / _ERROR_THRESHOLD)
RATE_COUNTERS = (("crc_flit", "CRC flit"), ("crc_data", "CRC data"))
# recorded and named when non-zero, not judged by DCGM's health watch
NOTED_COUNTERS = (("ecc_data", "ECC data"),)
ALL_COUNTERS = FATAL_COUNTERS + RATE_COUNTERS + NOTED_COUNTERS
NOT_RECORDED = "this health result records no %s (written by a probe from before they were read)"


class EarlierRun:
    """The host's previous health result: its GPUs by UUID, its run id and the seconds between its start and this one's."""

    def __init__(self, context: Any) -> None:
        self.gpus: Dict[str, Dict[str, Any]] = {}
        self.run = ""
        self.elapsed_s: Optional[float] = None
        self.why_not = "no earlier health result of this host"
        try:
            earlier = (getattr(context, "earlier_envelopes", None) or {}).get("health")
        except (OSError, ValueError) as exc:  # read back from the store now: it may have gone or changed since it was found
            self.why_not = "the earlier health result could not be read back: %s" % exc
            return
        if not isinstance(earlier, Mapping):
            return
        self.run = str(earlier.get("run_id") or "the previous run")
        gpus = dig(earlier, "data", "gpus")
        if not isinstance(gpus, list):
            self.why_not = "the earlier run %s has no GPU list" % self.run
            return
        self.gpus = {gpu["uuid"]: gpu for gpu in gpus if isinstance(gpu, dict) and isinstance(gpu.get("uuid"), str)}
        seconds, unused_clock = start_interval(earlier, getattr(context, "envelope", None))
        if seconds is not None and seconds > 0:
            self.elapsed_s = seconds
        self.why_not = ""

    def links_of(self, gpu: Dict[str, Any]) -> Tuple[Dict[int, Dict[str, Any]], str]:
        """The earlier run's counters of this GPU by link, or ({}, why they are not there)."""
        if self.why_not:
            return {}, self.why_not
        earlier_gpu = self.gpus.get(gpu.get("uuid")) if isinstance(gpu.get("uuid"), str) else None
        if earlier_gpu is None:
            return {}, "the earlier run %s has no GPU with this UUID" % self.run
        errors = earlier_gpu.get("nvlink_errors", MISSING)
        if errors is MISSING or is_unavailable(errors) or not isinstance(errors, dict):
            return {}, "the earlier run %s recorded no NVLink error counters for this GPU" % self.run
        return {row["link"]: row for row in errors.get("links") or [] if isinstance(row, dict) and isinstance(row.get("link"), int)}, ""


def _duration_words(seconds: Optional[float]) -> str:
    if seconds is None:
        return "an unknown time"
    if seconds < 120:
        return "%.0f s" % seconds
    if seconds < 7200:
        return "%.0f min" % (seconds / 60.0)
    return "%.1f h" % (seconds / 3600.0)


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@reads_params("rise_min", "crc_rate_fail_per_s", "source")
def nvlink_errors(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Per GPU, its links' replay, recovery and CRC errors: since the driver loaded and risen since the previous run."""
    rise_min, crc_limit = rule["params"]["rise_min"], rule["params"]["crc_rate_fail_per_s"]
    source = "%s (%s)" % (rule["params"]["source"], param_source(rule, "crc_rate_fail_per_s"))
    threshold = ("replay or recovery errors rising by >= %d between runs fail; CRC errors rising at >= %s/s fail, slower warn; "
                 "a constant non-zero count since the driver loaded warns" % (rise_min, crc_limit))
    earlier = EarlierRun(context)

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        errors = gpu.get("nvlink_errors", MISSING)
        if errors is MISSING:
            return make_check(rule, host, "skip", "%s: %s" % (gpu_label(gpu), NOT_RECORDED % "NVLink error counters"), gpu)
        if is_unavailable(errors):
            return unavailable_check(rule, host, "NVLink error counters", errors, gpu)
        earlier_links, why_not = earlier.links_of(gpu)
        failures, warnings, resets = [], [], []
        total = 0
        for row in errors.get("links") or []:
            link = row.get("link")
            before = earlier_links.get(link, {})
            for counter, words in ALL_COUNTERS:
                now = _int(row.get(counter))
                if now is None:
                    continue
                total += now if counter != "ecc_data" else 0
                then = _int(before.get(counter))
                rise = None if then is None else now - then
                if rise is not None and rise < 0:
                    resets.append("link %s %s %d -> %d" % (link, words, then, now))
                    rise = None
                sentence = _judge_counter(link, counter, words, now, rise, earlier, rise_min, crc_limit)
                if sentence is None:
                    continue
                (failures if sentence[0] == "fail" else warnings).append(sentence[1])
        # the value is a count since the driver loaded: held against 0, what a healthy link counts; the rates are in threshold
        fields = {"value": total, "unit": "errors", "reference": 0, "reference_source": source, "threshold": threshold}
        notes = _notes(earlier, why_not, resets)
        links = len(errors.get("links") or [])
        if failures:
            return make_check(rule, host, rule["severity"], "%s: %s%s; drain the node, reset the GPU and re-run: errors that rise "
                              "again mean a bad link (reseat or RMA)" % (gpu_label(gpu), "; ".join(failures + warnings), notes),
                              gpu, **fields)
        if warnings:
            return make_check(rule, host, "warn", "%s: %s%s" % (gpu_label(gpu), "; ".join(warnings), notes), gpu, **fields)
        return make_check(rule, host, "pass", "%s: no replay, recovery or CRC error on its %d NVLinks since the driver loaded%s"
                          % (gpu_label(gpu), links, notes), gpu, **fields)
    return per_gpu(host, data, rule, "the NVLink error counters", judge)


def _judge_counter(link: Any, counter: str, words: str, now: int, rise: Optional[int], earlier: EarlierRun, rise_min: int,
                   crc_limit: float) -> Optional[Tuple[str, str]]:
    """("fail" | "warn", the sentence) for one counter of one link, or None when there is nothing to say."""
    since = "since %s (%s earlier)" % (earlier.run, _duration_words(earlier.elapsed_s))
    if rise is not None and rise >= rise_min:
        if counter in dict(FATAL_COUNTERS):
            return "fail", "link %s: %d %s errors since the driver loaded, %d of them new %s" % (link, now, words, rise, since)
        if counter in dict(RATE_COUNTERS):
            if earlier.elapsed_s is None:
                return "warn", "link %s: %s errors rose by %d %s; the time between the runs is unknown, so no rate" % (
                    link, words, rise, since)
            rate = rise / earlier.elapsed_s
            verdict = "fail" if rate >= crc_limit else "warn"
            return verdict, "link %s: %s errors rose by %d %s: %.3g/s, %s %s/s" % (
                link, words, rise, since, rate, "at or above" if verdict == "fail" else "below", crc_limit)
        return "warn", "link %s: %s errors rose by %d %s" % (link, words, rise, since)
    if now > 0:
        if rise is None:
            still = "no earlier count to tell whether they still rise"
        elif rise == 0:
            still = "unchanged %s" % since
        else:
            still = "%d of them new %s, below the rise of %d that counts" % (rise, since, rise_min)
        return "warn", "link %s: %d %s errors since the driver loaded, %s" % (link, now, words, still)
    return None


def _notes(earlier: EarlierRun, why_not: str, resets: List[str]) -> str:
    notes = []
    if why_not:
        notes.append("not compared with an earlier run: %s" % why_not)
    if resets:
        notes.append("counters fell since %s (%s): the driver reloaded or the GPU was reset, so those are not compared"
                     % (earlier.run, ", ".join(resets)))
    return " (%s)" % "; ".join(notes) if notes else ""


# ------------------------------------------------------------------------------------------------ NVSwitch fabric


def nvswitch_evidence(data: Dict[str, Any]) -> str:
    """Why this host has an NVSwitch fabric, in words, or "" when nothing says so."""
    count = dig(data, "machine", "pci_nvswitch_count")
    if isinstance(count, int) and count > 0:
        return "%d NVSwitch%s on the PCI bus" % (count, "es" if count > 1 else "")
    gpus = data.get("gpus")
    for gpu in gpus if isinstance(gpus, list) else []:
        links = dig(gpu, "nvlink", "links")
        for link in links if isinstance(links, list) else []:
            if isinstance(link, dict) and link.get("remote_device_type") == "switch":
                return "NVML: GPU %s link %s reaches an NVSwitch" % (gpu.get("index"), link.get("link"))
    return ""


# (field of fabric.health, its value that is a trouble or None for any but these, words)
FABRIC_HEALTH_TROUBLES = (
    ("degraded_bandwidth", "yes", "its bandwidth is degraded"),
    ("route_unhealthy", "yes", "a route is unhealthy"),
    ("route_recovery_in_progress", "yes", "a route recovery is in progress"),
    ("access_timeout_recovery_in_progress", "yes", "an access timeout recovery is in progress"),
    ("gfm_state", "disconnected", "the global fabric manager is disconnected"),
)


def fabric_health_troubles(health: Any) -> List[str]:
    """What the decoded fabric health mask (probelib.nvml.gpu_fabric) reports wrong, in words; [] when nothing is."""
    if not isinstance(health, dict):
        return []
    troubles = [words for name, bad, words in FABRIC_HEALTH_TROUBLES if health.get(name) == bad]
    configuration = health.get("incorrect_configuration")
    if isinstance(configuration, str) and configuration not in ("none", "not_supported"):
        troubles.append("its configuration is incorrect (%s)" % configuration.replace("_", " "))
    return troubles


@reads_params("source")
def gpu_fabric(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Per GPU, its NVSwitch fabric registration: completed with success passes, in progress warns, not started or an
    error status fails where the host has NVSwitches; a GPU or host without the fabric is a skip with the reason."""
    evidence = nvswitch_evidence(data)
    shape = getattr(context, "machine", None)
    nvswitches = dig(data, "machine", "pci_nvswitch_count")
    in_vm = getattr(shape, "in_vm", False) and not (isinstance(nvswitches, int) and nvswitches > 0)
    threshold = "state completed and status success"

    def judge(gpu: Dict[str, Any]) -> Optional[Check]:
        fabric = gpu.get("fabric", MISSING)
        if fabric is MISSING:
            return make_check(rule, host, "skip", "%s: %s" % (gpu_label(gpu), NOT_RECORDED % "GPU fabric info"), gpu)
        label = gpu_label(gpu)
        nvlink = gpu.get("nvlink", MISSING)
        if in_vm and nvlink is not MISSING and _none_supported(nvlink):
            state = fabric["unavailable"] if is_unavailable(fabric) else "state %s" % fabric.get("state")
            return make_check(rule, host, "skip", "%s: GPU fabric %s; %s, in a virtual machine (%s): this slice has no NVLink, "
                              "so it takes no part in an NVSwitch fabric; not judged here" % (
                                  label, state, _nvlink_words(nvlink), shape.platform_evidence), gpu, threshold=threshold)
        if is_unavailable(fabric):
            if not evidence:
                return make_check(rule, host, "skip", "%s: the GPU fabric info could not be read (%s); nothing says this host has "
                                  "an NVSwitch fabric (no NVSwitch on the PCI bus, no NVLink to a switch)" % (
                                      label, fabric["unavailable"]), gpu, threshold=threshold)
            return unavailable_check(rule, host, "the GPU fabric info", fabric, gpu, status="error")
        state, status = fabric.get("state"), fabric.get("status")
        where = "; this host has an NVSwitch fabric (%s)" % evidence if evidence else ""
        fields = {"value": "%s/%s" % (state, status) if state != "not_supported" else state, "threshold": threshold,
                  "reference": "completed/success", "reference_source": "%s (%s)" % (rule["params"]["source"], param_source(rule, "source"))}
        if state == "not_supported":
            but = where + ", but this GPU's NVML does not report its registration (GPU fabric info starts with Hopper)" if where else ""
            return make_check(rule, host, "skip", "%s: %s%s" % (label, fabric.get("reason") or "NVML reports no fabric", but),
                              gpu, **fields)
        identity = "clique %s, cluster %s" % (fabric.get("clique_id"), fabric.get("cluster_uuid"))
        if state == "completed" and status == "success":
            troubles = fabric_health_troubles(fabric.get("health"))
            if troubles:
                return make_check(rule, host, "warn", "%s: registered in the NVSwitch fabric (%s), but its fabric health says %s: "
                                  "see the nvidia-fabricmanager log" % (label, identity, "; ".join(troubles)), gpu, **fields)
            return make_check(rule, host, "pass", "%s: registered in the NVSwitch fabric (%s)" % (label, identity), gpu, **fields)
        if state == "completed":
            return make_check(rule, host, rule["severity"], "%s: the fabric manager finished registering this GPU with the error "
                              "%s (NVML return %s)%s: see the nvidia-fabricmanager log, restart it, reset the GPU" % (
                                  label, status, fabric.get("status_code"), where), gpu, **fields)
        if state == "in_progress":
            return make_check(rule, host, "warn", "%s: the fabric manager is still registering this GPU (state in progress)%s: "
                              "re-run in a minute; CUDA work may fail until it completes" % (label, where), gpu, **fields)
        if state == "not_started" and not evidence:
            return make_check(rule, host, "warn", "%s: NVML reports the fabric registration not started, but nothing says this host "
                              "has an NVSwitch fabric (no NVSwitch on the PCI bus, no NVLink to a switch): check whether it "
                              "should run nvidia-fabricmanager" % label, gpu, **fields)
        if state == "not_started":
            return make_check(rule, host, rule["severity"], "%s: the fabric manager has not started registering this GPU (state "
                              "not started)%s: is nvidia-fabricmanager installed, of the driver's version, and running? Until "
                              "it registers the GPU, CUDA cannot use it" % (label, where), gpu, **fields)
        return make_check(rule, host, "warn", "%s: NVML reports the fabric state %s, which this check does not know%s" % (
            label, state, where), gpu, **fields)
    return per_gpu(host, data, rule, "the GPU fabric state", judge)


NVLINK_CHECKS: Dict[str, CheckFunction] = {
    "nvlink_errors": nvlink_errors,
    "gpu_fabric": gpu_fabric,
}
