# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every probe's check functions share: a check built from its rule, a GPU's label, an unavailable field's check.

A check function is (host, data, rule, context) -> List[Check] (judge/catalogue.py's CheckFunction); reading a field
by path is plugin_utils/result_fields.py's dig.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from .model import Check

CheckFunctionT = TypeVar("CheckFunctionT", bound=Callable[..., Any])


def reads_params(*names: str) -> Callable[[CheckFunctionT], CheckFunctionT]:
    """Mark a check function as reading these params of its rule with no default of its own: the rule holds them
    (its probe's rules.yaml), and a rules file whose rule lacks one is refused before anything runs."""
    def mark(function: CheckFunctionT) -> CheckFunctionT:
        setattr(function, "read_params", names)
        return function
    return mark


def params_read(function: Callable[..., Any]) -> Tuple[str, ...]:
    """The params a check function reads from its rule (reads_params); () for one that declares none."""
    return tuple(getattr(function, "read_params", ()))


def unavailable_status(reason: str) -> str:
    """skip when the platform does not offer the field (NVML "Not Supported"), else error (it should have been readable)."""
    lowered = reason.lower()
    return "skip" if "not supported" in lowered or "not_supported" in lowered else "error"


def gpu_label(gpu: Dict[str, Any]) -> str:
    uuid = gpu.get("uuid")
    if isinstance(uuid, str):
        return "GPU %s (%s)" % (gpu.get("index"), uuid[:12])
    return "GPU %s" % gpu.get("index")


def make_check(rule: Dict[str, Any], host: str, status: str, reason: str, gpu: Optional[Dict[str, Any]] = None,
               **fields: Any) -> Check:
    check = Check(id=rule["id"], host=host, probe=rule.get("probe") or "", status=status, reason=reason, **fields)
    if gpu is not None:
        uuid = gpu.get("uuid")
        check.gpu_uuid = uuid if isinstance(uuid, str) else None
        check.gpu_index = gpu.get("index") if isinstance(gpu.get("index"), int) else None
    return check


def unavailable_check(rule: Dict[str, Any], host: str, what: str, field_value: Dict[str, str],
                      gpu: Optional[Dict[str, Any]] = None, status: Optional[str] = None) -> Check:
    reason = field_value["unavailable"]
    status = status or unavailable_status(reason)
    prefix = "%s: " % gpu_label(gpu) if gpu is not None else ""
    verb = "is not offered here" if status == "skip" else "could not be read"
    return make_check(rule, host, status, "%s%s %s: %s" % (prefix, what, verb, reason), gpu)


def each_gpu_section(rule: Dict[str, Any], host: str, data: Dict[str, Any], key: str, what: str,
                     judge_one: Callable[[Dict[str, Any], Dict[str, Any]], Check]) -> List[Check]:
    """One check per GPU of data.gpus from its section gpus[i][key]: judge_one(gpu, section) where it was recorded; a
    skip where the result predates the section; the section's own reason where it could not be read."""
    checks = []
    gpus = data.get("gpus")
    for gpu in gpus if isinstance(gpus, list) else []:
        if not isinstance(gpu, dict):
            continue
        if key not in gpu:
            checks.append(make_check(rule, host, "skip", "%s: this result holds no %s (a probe from before they were read)"
                                     % (gpu_label(gpu), what), gpu))
        elif isinstance(gpu[key], dict) and set(gpu[key]) == {"unavailable"}:
            checks.append(unavailable_check(rule, host, "the " + what, gpu[key], gpu))
        elif isinstance(gpu[key], dict):
            checks.append(judge_one(gpu, gpu[key]))
    return checks


def param_source(rule: Dict[str, Any], name: str) -> str:
    where = "inventory override" if "params" in rule.get("overridden", []) else "rules"
    return "rule %s param %s (%s)" % (rule["id"], name, where)
