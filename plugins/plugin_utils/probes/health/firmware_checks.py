# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""health's firmware checks: every GPU of a model in a node on the same VBIOS, InfoROM image and GSP firmware
(health.firmware_uniform), and each GPU on the versions its baseline pins (health.firmware_pinned). Across the SKU's
hosts the same versions are settings (firmware_parts.firmware_settings). Pure Python."""
from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Tuple

from ...probe_kit.kit import (
    baseline_file, CheckFunction, gpu_label, make_check, unavailable_check, unavailable_status, Check, MISSING,
    is_unavailable)
from .firmware_parts import FIRMWARE_PARTS, FirmwarePart, readable_gpus
from .firmware_versions import compare_versions

UNIFORM_THRESHOLD = "one version of each part on every GPU of a model in the node"


def _model(gpu: Dict[str, Any]) -> str:
    return gpu["name"] if isinstance(gpu.get("name"), str) else "GPUs of unknown model"


def _indexes(gpus: List[Dict[str, Any]]) -> str:
    return ", ".join(str(gpu.get("index")) for gpu in gpus)


class _Uniformity:
    """What one host's comparison found, gathered over models and parts before it becomes checks."""

    def __init__(self) -> None:
        self.by_gpu: Dict[int, Tuple[Dict[str, Any], List[str], Tuple[str, str]]] = {}
        self.split: List[str] = []
        self.alike: List[str] = []
        self.unread: List[Tuple[str, str]] = []   # (words, reason)

    def differs(self, gpu: Dict[str, Any], words: str, value: str, majority: str) -> None:
        entry = self.by_gpu.setdefault(id(gpu), (gpu, [], (value, majority)))
        entry[1].append(words)


def _compare_part(found: _Uniformity, model: str, gpus: List[Dict[str, Any]], part: FirmwarePart) -> None:
    present = [gpu for gpu in gpus if part.field in gpu]
    if not present:
        return
    readable = [gpu for gpu in present if isinstance(gpu[part.field], str)]
    for gpu in present:
        if is_unavailable(gpu[part.field]):
            found.unread.append(("%s of GPU %s" % (part.words, gpu.get("index")), gpu[part.field]["unavailable"]))
    if not readable:
        return
    counts = Counter(gpu[part.field] for gpu in readable)
    if len(counts) == 1:
        version = readable[0][part.field]
        if len(readable) == 1:
            found.alike.append("%s %s on the only %s GPU read" % (part.words, version, model))
        else:
            found.alike.append("%s %s on all %d %s GPUs" % (part.words, version, len(readable), model))
        return
    majority, count = counts.most_common(1)[0]
    if count * 2 <= len(readable):
        groups = "; ".join("%s on GPU %s" % (version, _indexes([gpu for gpu in readable if gpu[part.field] == version]))
                           for version in sorted(counts))
        found.split.append("%s differs across the %d %s GPUs with no majority: %s" % (part.words, len(readable), model, groups))
        return
    for gpu in readable:
        if gpu[part.field] != majority:
            found.differs(gpu, "%s %s where the other %d of %d %s GPUs run %s" % (
                part.words, gpu[part.field], count, len(readable), model, majority), gpu[part.field], majority)


def firmware_uniform(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Within the node, per GPU model: one VBIOS, one InfoROM image, one GSP firmware. A GPU off the majority is named
    with its version and the majority's; a split with no majority is one host check; a single GPU has nothing to
    compare."""
    gpus = data.get("gpus", MISSING)
    if gpus is MISSING:
        return []
    if is_unavailable(gpus):
        return [unavailable_check(rule, host, "the GPU list (needed to compare firmware)", gpus)]
    readable = readable_gpus(data)
    if len(readable) == 1:
        gpu = readable[0]
        versions = ", ".join("%s %s" % (part.words, gpu[part.field]) for part in FIRMWARE_PARTS if isinstance(gpu.get(part.field), str))
        return [make_check(rule, host, "pass", "one GPU: nothing to compare%s" % (" (%s)" % versions if versions else ""), gpu,
                           threshold=UNIFORM_THRESHOLD)]
    models: Dict[str, List[Dict[str, Any]]] = {}
    for gpu in readable:
        models.setdefault(_model(gpu), []).append(gpu)
    found = _Uniformity()
    for model in sorted(models):
        for part in FIRMWARE_PARTS:
            _compare_part(found, model, models[model], part)
    unread = "; not read: %s" % "; ".join("%s (%s)" % pair for pair in found.unread) if found.unread else ""
    checks = []
    for gpu, words, (value, majority) in found.by_gpu.values():
        checks.append(make_check(rule, host, rule["severity"], "%s: %s; update its firmware to match%s" % (
            gpu_label(gpu), "; ".join(words), unread), gpu, value=value, reference=majority,
            reference_source="the version most GPUs of its model in this node run", threshold=UNIFORM_THRESHOLD))
    if found.split:
        checks.append(make_check(rule, host, rule["severity"], "%s; update the firmware so every GPU runs one version%s" % (
            "; ".join(found.split), unread), threshold=UNIFORM_THRESHOLD))
    if checks:
        return checks
    if not found.alike and found.unread:
        reasons = [reason for unused_words, reason in found.unread]
        status = "skip" if all(unavailable_status(reason) == "skip" for reason in reasons) else "error"
        return [make_check(rule, host, status, "no firmware version could be compared: %s" % "; ".join(
            "%s (%s)" % pair for pair in found.unread), threshold=UNIFORM_THRESHOLD)]
    if not found.alike:
        return []
    return [make_check(rule, host, "pass", "%s%s" % ("; ".join(found.alike), unread), threshold=UNIFORM_THRESHOLD)]


def _pin_words(pin: Dict[str, Any]) -> str:
    if "allowed" in pin:
        return "one of %s" % ", ".join(pin["allowed"])
    return "%s or newer" % pin["minimum"]


# The worse of two outcomes for one GPU's pins.
_STATUS_RANK = {"pass": 0, "skip": 1, "warn": 2, "error": 3, "fail": 4}
Outcome = Tuple[str, str, Dict[str, Any]]   # (status, words, the check's value fields)


def _judge_pin(rule: Dict[str, Any], part: FirmwarePart, value: Any, pin: Dict[str, Any], source: str) -> Outcome:
    if value is MISSING:
        return "skip", "this result does not record the %s; the baseline pins %s" % (part.words, _pin_words(pin)), {}
    if is_unavailable(value):
        reason = value["unavailable"]
        status = unavailable_status(reason)
        return status, "the %s (pinned to %s) %s: %s" % (
            part.words, _pin_words(pin), "is not offered here" if status == "skip" else "could not be read", reason), {}
    fields = {"value": value, "reference": pin.get("minimum") or ", ".join(pin.get("allowed", [])),
              "reference_source": "%s (%s)" % (source, pin["source"]), "threshold": _pin_words(pin)}
    if "allowed" in pin:
        if value in pin["allowed"]:
            return "pass", "%s %s, pinned by %s" % (part.words, value, source), fields
        return rule["severity"], "%s %s is not one the baseline allows (%s, %s: %s); update the firmware, or add the version " \
            "to the pin with its source" % (part.words, value, _pin_words(pin), source, pin["source"]), fields
    order = compare_versions(value, pin["minimum"])
    if order is None:
        return "warn", "%s %s cannot be ordered against the pinned minimum %s (%s): another version scheme; check the " \
            "pin" % (part.words, value, pin["minimum"], source), fields
    if order >= 0:
        return "pass", "%s %s, at or above the minimum %s pinned by %s" % (part.words, value, pin["minimum"], source), fields
    return rule["severity"], "%s %s is older than the minimum %s (%s: %s); update the firmware" % (
        part.words, value, pin["minimum"], source, pin["source"]), fields


def firmware_pinned(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """Each GPU's VBIOS, InfoROM image and GSP firmware against the versions the host's baseline pins (firmware:):
    one check per GPU, of its worst part."""
    gpus = data.get("gpus", MISSING)
    if gpus is MISSING:
        return []
    baseline = getattr(context, "baseline", None)
    if not baseline:
        return [make_check(rule, host, "skip", "the SKU is unknown, so no baseline pins firmware")]
    pins = baseline.get("firmware") or {}
    pinned = [part for part in FIRMWARE_PARTS if part.pin_key in pins]
    if not pinned:
        return [make_check(rule, host, "skip", "the baseline pins no firmware (%s has no firmware: key)" % baseline_file(baseline))]
    if is_unavailable(gpus):
        return [unavailable_check(rule, host, "the GPU list (needed for the pinned firmware)", gpus)]
    checks = []
    for gpu in readable_gpus(data):
        outcomes = [_judge_pin(rule, part, gpu.get(part.field, MISSING), pins[part.pin_key],
                               context.baseline_source("firmware.%s" % part.pin_key)) for part in pinned]
        worst = max(outcomes, key=lambda outcome: _STATUS_RANK.get(outcome[0], 0))
        checks.append(make_check(rule, host, worst[0], "%s: %s" % (gpu_label(gpu), "; ".join(outcome[1] for outcome in outcomes)),
                                 gpu, **worst[2]))
    return checks


FIRMWARE_CHECKS: Dict[str, CheckFunction] = {
    "firmware_uniform": firmware_uniform,
    "firmware_pinned": firmware_pinned,
}
