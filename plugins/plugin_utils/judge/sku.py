# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which baseline (SKU) a GPU and a host are: NVML name, PCI device id and memory against each baseline's match block.

The GPUs are the generic descriptors of the probe that describes the machine (judge/machine_facts.py).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .baseline_origin import USER_FOLDER_VARIABLE, baseline_file
from .machine_facts import GpuDescriptor


def describe_identity(name: Optional[str], device_id: Optional[str], memory_mib: Optional[int]) -> str:
    return "%s, %s, %s" % (name or "unnamed GPU", device_id or "unknown PCI device id",
                           "%d MiB" % memory_mib if memory_mib is not None else "unknown memory")


def no_match_sentence(name: Optional[str], device_id: Optional[str], memory_mib: Optional[int]) -> str:
    """Why a GPU has no SKU, and the two ways to give it one."""
    return ("no baseline matches %s (its NVML name, PCI device id and memory), so its SKU is unknown and nothing it "
            "measures has a reference; to validate it, write baselines/<id>.yaml for it (copy the file of a similar SKU, set "
            "match.names, match.pci_device_ids and match.memory_mib from these values, and each datasheet and known-good "
            "number with its source) in a folder given with %s, which replaces the collection's baselines/ (copy those "
            "in too), or calibrate one from a stored run of healthy hosts with playbooks/calibrate.yml" % (
                describe_identity(name, device_id, memory_mib), USER_FOLDER_VARIABLE))


def _memory_fits(baseline: Dict[str, Any], memory_mib: Optional[int]) -> Optional[bool]:
    limits = baseline.get("match", {}).get("memory_mib") or {}
    if memory_mib is None or not limits:
        return None
    low, high = limits.get("min"), limits.get("max")
    return (low is None or memory_mib >= low) and (high is None or memory_mib <= high)


def identify_gpu(gpu: GpuDescriptor, baselines: List[Dict[str, Any]]) -> Tuple[Optional[str], str]:
    """(baseline id or None, a sentence saying how it matched or why nothing did) for one GPU.

    A baseline matches when the NVML name is one of match.names or the PCI device id is one of
    match.pci_device_ids, and the memory total (when known) lies within match.memory_mib. When several match,
    the one matching on both name and id wins; a tie is reported as ambiguous.
    """
    name, device_id, memory_mib = gpu.name, gpu.device_id, gpu.memory_mib
    identity = describe_identity(name, device_id, memory_mib)
    candidates = []
    for baseline in baselines:
        match = baseline.get("match", {})
        by_name = name is not None and name in (match.get("names") or [])
        ids = [str(entry.get("id", entry) if isinstance(entry, dict) else entry).lower() for entry in match.get("pci_device_ids") or []]
        by_id = device_id is not None and device_id in ids
        if not (by_name or by_id):
            continue
        fits = _memory_fits(baseline, memory_mib)
        if fits is False:
            continue
        candidates.append((int(by_name) + int(by_id), baseline["id"], by_name, by_id, fits, ids, baseline_file(baseline)))
    if not candidates:
        return None, no_match_sentence(name, device_id, memory_mib)
    candidates.sort(key=lambda candidate: -candidate[0])
    if len(candidates) > 1 and candidates[0][0] == candidates[1][0]:
        tied = [candidate for candidate in candidates if candidate[0] == candidates[0][0]]
        return None, "%s matches several baselines equally (%s), so its SKU is unknown; make their match blocks distinct" % (
            identity, ", ".join(sorted(candidate[6] for candidate in tied)))
    unused_score, sku, by_name, by_id, fits, ids, unused_file = candidates[0]
    how = [part for part, used in (("name", by_name), ("PCI device id", by_id), ("memory", fits)) if used]
    sentence = "%s is %s (matched by %s)" % (identity, sku, " and ".join(how))
    if by_name and not by_id and device_id is not None and ids:
        sentence += "; its PCI device id is not among the baseline's (%s)" % ", ".join(ids)
    return sku, sentence


def unknown_group(gpu_name: Optional[str]) -> str:
    """The fleet-comparison group of a GPU without a baseline: its NVML name."""
    return "unknown:%s" % (gpu_name or "unnamed GPU")


def identify_host(gpus: Optional[Sequence[GpuDescriptor]], baselines: List[Dict[str, Any]], unavailable: Optional[str] = None
                  ) -> Tuple[Optional[str], str, List[Tuple[Optional[str], str]]]:
    """(host SKU or None, sentence, per-GPU (sku, sentence)) from the machine's GPUs (None: not listed, unavailable
    says why when it is known).

    The host's SKU is its GPUs' SKU; mixed SKUs, unknown GPUs or no GPU list give None and say why.
    """
    if gpus is None and unavailable is not None:
        return None, "no GPU list to identify the SKU from: %s" % unavailable, []
    if not gpus:
        return None, "no GPU found, so no SKU", []
    per_gpu = []
    for gpu in gpus:
        if gpu.unreadable is not None:
            per_gpu.append((None, "GPU %s could not be read: %s" % (gpu.index, gpu.unreadable)))
        else:
            per_gpu.append(identify_gpu(gpu, baselines))
    skus = sorted(set(sku for sku, unused_sentence in per_gpu if sku is not None))
    unknown = [sentence for sku, sentence in per_gpu if sku is None]
    if len(skus) == 1 and not unknown:
        return skus[0], "%d x %s" % (len(gpus), per_gpu[0][1]), per_gpu
    if not skus:
        return None, unknown[0] if len(set(unknown)) == 1 else "; ".join(sorted(set(unknown))), per_gpu
    counts = []
    for sku in skus:
        counts.append("%d x %s" % (sum(1 for item in per_gpu if item[0] == sku), sku))
    if unknown:
        counts.append("%d unknown (%s)" % (len(unknown), "; ".join(sorted(set(unknown)))))
    return None, "mixed GPUs on one host: %s" % ", ".join(counts), per_gpu
