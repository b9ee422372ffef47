# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""membw's repeats of its largest copy agree: their coefficient of variation against params.max_cv_pct."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import gpu_label, make_check, param_source, reads_params, Check, finite, format_quantity


@reads_params("max_cv_pct")
def membw_repeat_cv(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    limit = float(rule["params"]["max_cv_pct"])
    devices = data.get("devices")
    checks = []
    for entry in devices if isinstance(devices, list) else []:
        if not isinstance(entry, dict):
            continue
        repeats = entry.get("repeats") if isinstance(entry.get("repeats"), dict) else {}
        device = entry.get("device") if isinstance(entry.get("device"), dict) else {}
        gpu = {"index": device.get("index"), "uuid": device.get("uuid") if isinstance(device.get("uuid"), str) else None}
        cv = repeats.get("cv_pct")
        if not isinstance(cv, (int, float)):
            continue
        if device.get("kind") != "cuda":
            checks.append(make_check(rule, host, "skip", "the CPU's copy repeats vary by %s: the CPU path is not a GPU "
                                     "measurement, so its noise is not judged" % format_quantity(cv, "%")))
            continue
        label = gpu_label(gpu)
        status = "pass" if cv <= limit else "warn"
        count = len(finite(repeats.get("bandwidths_gbps")))
        words = "%s: the %s copy %s varies by %s (coefficient of variation)" % (
            label, format_quantity(repeats.get("size_mib"), "MiB"), "repeated %d times" % count if count else "repeated",
            format_quantity(cv, "%"))
        if status == "warn":
            words += "; above %g %%: diagnose (clocks, other processes, thermals in the snapshot) before trusting the number" % limit
        checks.append(make_check(rule, host, status, words, gpu, value=round(cv, 3),
                                 unit="%", reference=limit, reference_source=param_source(rule, "max_cv_pct"),
                                 threshold="<= %g %%" % limit))
    return checks
