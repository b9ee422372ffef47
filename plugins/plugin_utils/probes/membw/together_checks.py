# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""membw's together phase judged: each worker's copy bandwidth against the alone reference at the same buffer size,
divided by the workers that share its device (each of two workers on one GPU is owed half, each GPU's one worker all)."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    make_check, param_source, reads_params, Check, format_quantity, is_unavailable, number_or_none, unavailable_reason,
    each_worker, percent_bounds_and_reference, percent_status, time_slicing_words)
from .together_share import reference_at, share_of


def no_reference_words(reference: Any, buffer_mib: Any) -> str:
    if is_unavailable(reference):
        return unavailable_reason(reference)
    alone = reference_at(reference, buffer_mib)
    if alone is not None and is_unavailable(alone.get("bandwidth_gbps")):
        return unavailable_reason(alone["bandwidth_gbps"])
    return "the result holds none at %s" % format_quantity(buffer_mib, "MiB")


@reads_params("warn_below_pct", "fail_below_pct", "shared_device_pct")
def membw_together_bandwidth(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    warn_below, fail_below, reference = percent_bounds_and_reference(rule, data)

    def judge_one(worker: Dict[str, Any], result: Dict[str, Any], gpu: Dict[str, Any], label: str) -> Check:
        value, size = number_or_none(result.get("bandwidth_gbps")), result.get("buffer_mib")
        if value is None:
            return make_check(rule, host, "error", "%s recorded no copy bandwidth" % label, gpu)
        share = share_of(worker, result, reference)
        if share is None:
            words = "%s copied %s at %s together; no alone reference at that size to compare with: %s" % (
                label, format_quantity(value, "GB/s"), format_quantity(size, "MiB"), no_reference_words(reference, size))
            return make_check(rule, host, "skip", words, gpu)
        words = "%s: %s at %s with every GPU copying at once, %s of its share %s (alone on GPU %s: %s%s)" % (
            label, format_quantity(value, "GB/s"), format_quantity(size, "MiB"), format_quantity(round(share.pct, 1), "%"),
            format_quantity(round(share.owed_gbps, 1), "GB/s"), reference.get("device_index"),
            format_quantity(share.alone_gbps, "GB/s"),
            ", shared by %d workers on the GPU" % share.sharing if share.sharing > 1 else "")
        if worker.get("kind") != "cuda":
            return make_check(rule, host, "skip", words + "; the CPU path is not a GPU measurement, so it is not judged", gpu)
        words += time_slicing_words(rule["params"], share.sharing)
        status = percent_status(share.pct, rule["params"], share.sharing)
        if status != "pass":
            words += ("; below %g %%: this GPU's memory is slower when the node works as a whole (clocks, power, cooling "
                      "under load)" % (warn_below if status == "warn" else fail_below))
        return make_check(rule, host, status, words, gpu, value=round(share.pct, 1), unit="%", reference=fail_below,
                          reference_source=param_source(rule, "fail_below_pct"),
                          threshold=">= %g %% of alone / workers on the GPU (warn below %g %%)" % (fail_below, warn_below))

    return each_worker(rule, host, data, judge_one)
