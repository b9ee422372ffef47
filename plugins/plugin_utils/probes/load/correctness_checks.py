# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The load probe's correctness checks: each GPU's running product compared with its reference product during the load
(gpus[i].correctness: a single differing element fails, with the GPU, the product's number and the magnitude), and the
references' sha256 compared across the GPUs of one model (the same seeded operands, the same library: the same bits)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ...probe_kit.kit import (
    each_gpu_section, gpu_label, make_check, param_source, reads_params, Check, difference_words, injected_words,
    mode_words, odd_ones, format_quantity, is_unavailable)

SECTION = "correctness"
WHAT = "checks of the products against the reference product"
CONSEQUENCE = ("a GPU that computes wrong results without an error corrupts whatever runs on it: drain it, re-run the load "
               "probe, and RMA it if it differs again")


def _mismatch_words(entry: Dict[str, Any]) -> str:
    return "check %s (product %s): %s" % (entry.get("check"), entry.get("product"), difference_words(entry))


def _gpu_check(host: str, gpu: Dict[str, Any], record: Dict[str, Any], rule: Dict[str, Any]) -> Check:
    label = gpu_label(gpu)
    allowed = int(rule["params"]["fail_above_mismatching_elements"])
    checks_run = record.get("checks_run")
    threshold = "differing elements over the load <= %d" % allowed
    source = param_source(rule, "fail_above_mismatching_elements")
    if not isinstance(checks_run, int) or checks_run < 1:
        return make_check(rule, host, "error", "%s: no check of the product ran during the load (checks_run %s), so nothing "
                          "says its results were right" % (label, checks_run), gpu, threshold=threshold)
    elements = record.get("mismatching_elements") or 0
    cost = record.get("check_cost_pct")
    cost_words = "; the checks took %s of the GPU time" % format_quantity(cost, "%") if isinstance(cost, (int, float)) else ""
    if elements > allowed:
        mismatches = record.get("mismatches") or []
        shown = "; ".join(_mismatch_words(entry) for entry in mismatches[:3])
        more = len(mismatches) - 3 if len(mismatches) > 3 else 0
        reason = "%s: %s of %d checks differed from the reference product (compared %s): %s%s%s; %s" % (
            label, record.get("mismatching_checks"), checks_run, mode_words(record), shown,
            "; and %d more kept" % more if more else "", injected_words(record.get("injected")), CONSEQUENCE)
        return make_check(rule, host, "fail", reason, gpu, value=elements, unit="elements", reference=allowed,
                          reference_source=source, threshold=threshold)
    reason = "%s: %d checks every %s checkpoint(s), each product equal to the reference computed before the load (%s)%s" % (
        label, checks_run, record.get("every_checkpoints"), mode_words(record), cost_words)
    return make_check(rule, host, "pass", reason, gpu, value=elements, unit="elements", reference=allowed,
                      reference_source=source, threshold=threshold)


@reads_params("fail_above_mismatching_elements")
def correctness(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    return each_gpu_section(rule, host, data, SECTION, WHAT, lambda gpu, record: _gpu_check(host, gpu, record, rule))


def _model(gpu: Dict[str, Any], record: Dict[str, Any]) -> Tuple[str, Any]:
    count = record.get("multi_processor_count")
    return str(gpu.get("name")), count if isinstance(count, int) else None


def _digests(data: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], List[Tuple[Dict[str, Any], Dict[str, Any]]], List[str]]:
    """(every GPU entry, the (gpu, record) pairs with a reference digest compared bit for bit, the GPUs left out and why)."""
    gpus = [gpu for gpu in data.get("gpus") or [] if isinstance(gpu, dict)] if isinstance(data.get("gpus"), list) else []
    compared, left_out = [], []
    for gpu in gpus:
        record = gpu.get(SECTION)
        if not isinstance(record, dict) or is_unavailable(record) or not isinstance(record.get("reference_sha256"), str):
            if isinstance(record, dict):
                why = record.get("unavailable") or (record.get("reference_sha256") or {}).get("unavailable", "no digest")
                left_out.append("%s (%s)" % (gpu_label(gpu), why))
            continue
        if record.get("mode") != "bitwise":
            left_out.append("%s (its products at rest differ, so its reference is not bit for bit reproducible)" % gpu_label(gpu))
            continue
        compared.append((gpu, record))
    return gpus, compared, left_out


@reads_params("fail_above_differing_gpus")
def correctness_across_gpus(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    gpus, compared, left_out = _digests(data)
    if not any(isinstance(gpu.get(SECTION), dict) for gpu in gpus):
        return [make_check(rule, host, "skip", "this load result holds no reference digests (a load probe from before the "
                           "products were checked); re-run the load probe", None)]
    if len(gpus) < 2:
        return [make_check(rule, host, "skip", "one GPU: there is no other GPU to compare its reference product with", None)]
    groups: Dict[Tuple[str, Any], List[Tuple[Dict[str, Any], Dict[str, Any]]]] = {}
    for gpu, record in compared:
        groups.setdefault(_model(gpu, record), []).append((gpu, record))
    allowed = int(rule["params"]["fail_above_differing_gpus"])
    threshold = "GPUs of one model whose reference product differs from the majority's <= %d" % allowed
    note = "; not compared: %s" % "; ".join(left_out) if left_out else ""
    checks = []
    for (name, sm_count), members in sorted(groups.items(), key=lambda item: str(item[0])):
        model = "%s%s" % (name, " (%s SMs)" % sm_count if sm_count is not None else "")
        if len(members) < 2:
            checks.append(make_check(rule, host, "skip", "%s: the only GPU of its model here (%s), nothing to compare with%s" % (
                gpu_label(members[0][0]), model, note), members[0][0]))
            continue
        majority, odd = odd_ones([(gpu, record["reference_sha256"]) for gpu, record in members])
        if len(odd) <= allowed:
            checks.append(make_check(rule, host, "pass", "%d %s GPUs computed the same reference product from the same seeded "
                                     "operands, bit for bit (sha256 %s…)%s" % (len(members), model, str(majority)[:12], note),
                                     None, value=len(odd), reference=allowed, threshold=threshold))
            continue
        if majority is None:
            words = ", ".join("%s sha256 %s…" % (gpu_label(gpu), record["reference_sha256"][:12]) for gpu, record in members)
            reason = ("%d %s GPUs disagree on the reference product of the same seeded operands and no digest holds a "
                      "majority (%s): at least one computes wrong; %s%s" % (len(members), model, words, CONSEQUENCE, note))
            checks.append(make_check(rule, host, "fail", reason, None, value=len(odd), reference=allowed, threshold=threshold))
            continue
        for gpu in odd:
            record = gpu[SECTION]
            reason = ("%s: its reference product (sha256 %s…) differs from the one %d other %s GPUs share (sha256 %s…), "
                      "computed from the same seeded operands by the same library; %s%s" % (
                          gpu_label(gpu), record["reference_sha256"][:12], len(members) - len(odd), model, str(majority)[:12],
                          CONSEQUENCE, note))
            checks.append(make_check(rule, host, "fail", reason, gpu, value=len(odd), reference=allowed, threshold=threshold))
    if not checks:
        checks.append(make_check(rule, host, "skip", "no GPU's reference product could be compared%s" % note, None))
    return checks


CORRECTNESS_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "correctness": correctness,
    "correctness_across_gpus": correctness_across_gpus,
}
