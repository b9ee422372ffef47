# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the toolchain probe: each contract it decided (driver vs CUDA build, NCCL, NVML vs CUDA, environment,
persistence mode) becomes one check, with the probe's remedy in the reason."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from .health_checks import make_check
from .model import Check


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


TOOLCHAIN_CHECKS: Dict[str, Callable[..., List[Check]]] = {"contract": contract}
