# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the toolchain probe: each contract it decided (driver vs CUDA build, NCCL, NVML vs CUDA, environment,
persistence mode) becomes one check, with the probe's remedy in the reason."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from ...probe_kit.kit import make_check, Check, Summary, summaries_agree as held_to_their_lists

# The CUDA device count of the nvml_cuda_agree contract and the UUIDs it lists (recorded only where every UUID was read).
SUMMARIES = (Summary("details.cuda_device_count", "details.cuda_uuids", each="contracts"),)


def _visible_words(visible: Any) -> str:
    return "CUDA_VISIBLE_DEVICES is unset" if visible is None else "CUDA_VISIBLE_DEVICES=%r" % (visible,)


def contract(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """The contract named by params.contract: pass, fail with its remedy, or (not decided) skip on a host whose SKU is
    unknown, error on a GPU host where it should have been decidable."""
    wanted = (rule.get("params") or {}).get("contract")
    contracts = data.get("contracts") if isinstance(data.get("contracts"), list) else []
    found = [entry for entry in contracts if isinstance(entry, dict) and entry.get("id") == wanted]
    if not found:
        return []
    entry = found[0]
    title, observed, expected = entry.get("title") or wanted, entry.get("observed", ""), entry.get("expected", "")
    status = entry.get("status")
    if wanted == "nvml_cuda_agree":
        short = cuda_short_of_host(host, entry, rule, context)
        if short:
            return short
    fields = {"value": observed, "reference": expected, "reference_source": "the toolchain probe's contract %s" % wanted,
              "threshold": "contract holds"}
    if status == "pass":
        return [make_check(rule, host, "pass", "%s: %s" % (title, observed), **fields)]
    if status == "fail":
        return [make_check(rule, host, "fail", "%s: %s (expected: %s). Remedy: %s" % (title, observed, expected, entry.get("remedy", "")),
                           **fields)]
    decided = "skip" if not getattr(context, "sku", None) else "error"
    return [make_check(rule, host, decided, "%s: %s%s" % (title, observed, (". Remedy: %s" % entry["remedy"]) if entry.get("remedy") else ""),
                       **fields)]


def cuda_short_of_host(host: str, entry: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """A fail when CUDA sees fewer GPUs than the host should have, whatever CUDA_VISIBLE_DEVICES says: a variable that
    hides GPUs leaves the GPU probes measuring only the rest, or nothing. Empty when the counts are not known or agree."""
    expected = getattr(context, "expected_gpus", None)
    details = entry.get("details") if isinstance(entry.get("details"), dict) else {}
    count = details.get("cuda_device_count")
    if not _is_count(expected) or not _is_count(count) or count >= expected:
        return []
    listed = (getattr(context, "host_data", None) or {}).get("health", {})
    nvml_gpus = listed.get("gpus") if isinstance(listed, dict) else None
    if isinstance(nvml_gpus, list) and len(nvml_gpus) < expected and count >= len(nvml_gpus):
        return []  # CUDA sees what NVML sees: the GPUs missing from both are health.gpu_count's finding
    visible = details.get("cuda_visible_devices")
    source = getattr(context, "expected_gpus_source", "") or "the host's expected GPU count"
    reason = ("CUDA sees %d of the %d GPU(s) this host should have (%s) — %s. Remedy: unset CUDA_VISIBLE_DEVICES or "
              "list every GPU of the host in it; a host meant to have fewer sets params.expected of the health.gpu_count "
              "rule in its rule overrides" % (count, expected, source, _visible_words(visible)))
    return [make_check(rule, host, "fail", reason, value=count, unit="GPUs", reference=expected, reference_source=source,
                       threshold=">= %d" % expected)]


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def summaries_agree(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    return held_to_their_lists(SUMMARIES, host, data, rule)


TOOLCHAIN_CHECKS: Dict[str, Callable[..., List[Check]]] = {"contract": contract, "summaries_agree": summaries_agree}
