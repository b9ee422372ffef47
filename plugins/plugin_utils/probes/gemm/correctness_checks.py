# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gemm probe's correctness check: every timed case's product after its timed repeats compared with the product
computed before timing (results[].verification); a single differing element of any case fails, with the device, the
case, the dtype and the magnitude."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from ...probe_kit.kit import (
    gpu_label, make_check, param_source, reads_params, Check, difference_words, injected_words, is_unavailable)

SHOWN = 3


def _label(device: Dict[str, Any]) -> str:
    return gpu_label(device) if device.get("kind") == "cuda" else "the CPU"


def _device_check(host: str, entry: Dict[str, Any], rule: Dict[str, Any]) -> Check:
    device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
    gpu = device if device.get("kind") == "cuda" else None
    label = _label(device)
    results = [result for result in entry.get("results") or [] if isinstance(result, dict)]
    records = [(result, result["verification"]) for result in results if "verification" in result]
    if not records:
        return make_check(rule, host, "skip", "%s: this gemm result holds no verification of its products (a gemm probe from "
                          "before they were verified); re-run the gemm probe" % label, gpu)
    verified = [(result, record) for result, record in records if isinstance(record, dict) and not is_unavailable(record)]
    if not verified:
        first = next((record["unavailable"] for unused_result, record in records if is_unavailable(record)), "no case was timed")
        return make_check(rule, host, "skip", "%s: no case's product was verified (%s)" % (label, first), gpu)
    allowed = int(rule["params"]["fail_above_mismatching_elements"])
    threshold = "differing elements per case <= %d" % allowed
    source = param_source(rule, "fail_above_mismatching_elements")
    wrong = [(result, record) for result, record in verified if (record.get("differing_elements") or 0) > allowed]
    tolerant = [result["name"] + " " + result["dtype"] for result, record in verified if record.get("mode") == "tolerance"]
    tolerant_words = ("; compared within the stated tolerance, not bit for bit, where two more products at rest "
                      "differed too: %s" % ", ".join(tolerant)) if tolerant else ""
    worst = max((record.get("differing_elements") or 0 for unused_result, record in verified), default=0)
    if wrong:
        shown = "; ".join("%s %s: %s%s" % (result["name"], result["dtype"], difference_words(record), injected_words(record.get("injected")))
                          for result, record in wrong[:SHOWN])
        more = "; and %d more case(s)" % (len(wrong) - SHOWN) if len(wrong) > SHOWN else ""
        reason = ("%s: %d of %d verified cases computed a different product after their timed repeats than before, from "
                  "the same inputs: %s%s%s; a device that computes wrong results without an error corrupts whatever runs "
                  "on it: drain it, re-run gemm, and RMA it if it differs again" % (
                      label, len(wrong), len(verified), shown, more, tolerant_words))
        return make_check(rule, host, "fail", reason, gpu, value=worst, unit="elements", reference=allowed,
                          reference_source=source, threshold=threshold)
    not_verified = len(records) - len(verified)
    reason = "%s: %d cases verified, each product after its timed repeats equal bit for bit to the one before%s%s" % (
        label, len(verified), tolerant_words, "; %d case(s) not verified (not timed)" % not_verified if not_verified else "")
    return make_check(rule, host, "pass", reason, gpu, value=worst, unit="elements", reference=allowed,
                      reference_source=source, threshold=threshold)


@reads_params("fail_above_mismatching_elements")
def correctness(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    devices = data.get("devices") if isinstance(data, dict) else None
    return [_device_check(host, entry, rule) for entry in devices if isinstance(entry, dict)] if isinstance(devices, list) else []


CORRECTNESS_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "correctness": correctness,
}
