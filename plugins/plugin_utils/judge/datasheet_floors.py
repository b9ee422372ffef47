# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Datasheet floors: a known-good value where no measurement exists, a stated ratio times the SKU's datasheet peak.

A baseline writes `known_good.<key>: {method: datasheet_floor, floor: {datasheet: <datasheet key>}}`; the loader
(rules_and_baselines.load_baselines) gives it its value from FLOOR_RATIOS, the one table of ratios, each with the
evidence it comes from: healthy GPUs measured against their datasheets, the lowest of them (so a healthy GPU of the
evidence's kind sits at or above 100 % of its floor). A ratio covers only the SKUs its evidence speaks for (the same chip
at the same board power, or for a host link any GPU, since the rate is the PCIe link's); a floor on another SKU is
refused, and that SKU's baseline needs a measured value (or one calibrated from a fleet: playbooks/calibrate.yml).

Pure Python: no Ansible, no torch.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

METHOD = "datasheet_floor"


@dataclass(frozen=True)
class FloorRatio:
    """known_good key's floor: ratio x the baseline's datasheet.<datasheet>, for the SKUs in covers (() = every SKU)."""

    known_good: str
    datasheet: str
    ratio: float
    evidence: str
    covers: Tuple[str, ...]
    covers_why: str


_HOPPER_SXM = ("h100-sxm", "h200-sxm")
_HOPPER_SXM_WHY = "the evidence's GPUs: GH100 on an SXM board at 700 W (H100 SXM, H200 SXM)"

FLOOR_RATIOS: Dict[str, FloorRatio] = {ratio.known_good: ratio for ratio in (
    FloorRatio(
        "torch_copy_4gib", "hbm_bandwidth", 0.887,
        "H200 SXM 4257.9 / 4800 GB/s = 0.887 (baselines/h200-sxm.yaml known_good.torch_copy_4gib, this project's "
        "measurement) and H100 SXM 3049 / 3350 GB/s = 0.910 (issue 44, the rig's H100 80GB HBM3, "
        "benchmarks/independent_measurements.py); the lower of the two",
        _HOPPER_SXM, _HOPPER_SXM_WHY + "; another memory (HBM2e, HBM3 at other clocks, GDDR) copies at another share of its peak"),
    FloorRatio(
        "bf16_matmul", "bf16_dense", 0.775,
        "burst bf16 matmul over the dense datasheet rate: H100 SXM 775 / 989 = 0.784 (issue 44, the rig, 8192^3, "
        "benchmarks/independent_gemm_states.py), H200 SXM 795 / 989 = 0.804, A100 SXM 271.2 / 312 = 0.869, B200 SXM "
        "1745 / 2250 = 0.776 (ml-engineering book (Stas Bekman), maximum achievable matmul FLOPS table); the lowest",
        ("h100-sxm", "h200-sxm", "a100-sxm-80gb", "a100-sxm-40gb", "b200"),
        "the evidence's GPUs on SXM boards (A100 SXM 40GB: the same GA100 at the same 400 W as the 80GB measured); a "
        "PCIe card's lower power limit can cap even a burst"),
    FloorRatio(
        "fp8_matmul", "fp8_dense", 0.708,
        "burst fp8 matmul over the dense datasheet rate: H100 SXM 1402.6 / 1979 = 0.709 and H200 SXM 1453.4 / 1979 = "
        "0.734 and B200 SXM 3432.5 / 4500 = 0.763 (ml-engineering book (Stas Bekman), maximum achievable matmul FLOPS "
        "table), H100 SXM 1420 / 1979 = 0.718 (issue 44, the rig, 8192^3); the lowest",
        ("h100-sxm", "h200-sxm", "b200"), "the evidence's GPUs on SXM boards"),
    FloorRatio(
        "bf16_matmul_sustained", "bf16_dense", 0.669,
        "sustained bf16 matmul (8192^3 after 3 s, power-capped) over the dense datasheet rate: H200 SXM 661.9 / 989 = "
        "0.669 (baselines/h200-sxm.yaml, this project's measurement) and H100 SXM 674 / 989 = 0.681 (issue 44, the rig, "
        "benchmarks/independent_gemm_states.py); the lower",
        _HOPPER_SXM, _HOPPER_SXM_WHY + "; a sustained rate is the board's power limit's, so it speaks for no other board"),
    FloorRatio(
        "fp8_matmul_sustained", "fp8_dense", 0.607,
        "sustained fp8 matmul (8192^3 after 3 s, power-capped) over the dense datasheet rate: H200 SXM 1202 / 1979 = "
        "0.607 (baselines/h200-sxm.yaml, this project's measurement) and H100 SXM 1207 / 1979 = 0.610 (issue 44, the "
        "rig, benchmarks/independent_gemm_states.py); the lower",
        _HOPPER_SXM, _HOPPER_SXM_WHY + "; a sustained rate is the board's power limit's, so it speaks for no other board"),
    FloorRatio(
        "nvbandwidth_h2d_ce", "pcie_bandwidth_per_direction", 0.825,
        "pinned host-to-GPU copies over the PCIe link's rate per direction: H200 SXM 55.4 / 63 = 0.879 (ml-engineering "
        "book, nvbandwidth), H100 SXM 55.4 / 63 = 0.879 (issue 44, the rig), RTX PRO 6000 Blackwell 53 / 63 = 0.841 "
        "(baselines/rtx-pro-6000-blackwell.yaml, a field report), A100 SXM about 26 / 31.5 = 0.825 (Microsoft SuperBench "
        "baselines, Azure NDv4, PCIe Gen4); the lowest",
        (), "every SKU: the rate is the PCIe link's (Gen4 and Gen5 x16 links of three GPU families in the evidence)"),
    FloorRatio(
        "nvbandwidth_d2h_ce", "pcie_bandwidth_per_direction", 0.825,
        "pinned GPU-to-host copies over the PCIe link's rate per direction: H200 SXM 55.1 / 63 = 0.875 (ml-engineering "
        "book, nvbandwidth), H100 SXM 55.4 / 63 = 0.879 (issue 44, the rig), RTX PRO 6000 Blackwell 53 / 63 = 0.841 "
        "(baselines/rtx-pro-6000-blackwell.yaml, a field report), A100 SXM about 26 / 31.5 = 0.825 (Microsoft SuperBench "
        "baselines, Azure NDv4, PCIe Gen4); the lowest",
        (), "every SKU: the rate is the PCIe link's (Gen4 and Gen5 x16 links of three GPU families in the evidence)"),
)}


def is_floor(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("method") == METHOD


def covers(ratio: FloorRatio, sku: str) -> bool:
    return not ratio.covers or sku in ratio.covers


def floor_problems(document: Dict[str, Any]) -> List[str]:
    """Why the baseline's datasheet_floor entries cannot be given a value (empty when each can)."""
    problems = []
    datasheet = document.get("datasheet") or {}
    for key, entry in sorted((document.get("known_good") or {}).items()):
        if not is_floor(entry):
            continue
        ratio = FLOOR_RATIOS.get(key)
        named = (entry.get("floor") or {}).get("datasheet")
        if ratio is None:
            problems.append("known_good.%s is a datasheet floor, but no floor ratio is known for %s (ratios exist for: %s)" % (
                key, key, ", ".join(sorted(FLOOR_RATIOS))))
        elif named != ratio.datasheet:
            problems.append("known_good.%s: its floor names datasheet.%s, but the ratio for %s is of datasheet.%s" % (
                key, named, key, ratio.datasheet))
        elif not covers(ratio, document.get("id")):
            problems.append("known_good.%s: the floor ratio for %s does not cover %s (it covers %s); measure it, or "
                            "calibrate it from healthy hosts (playbooks/calibrate.yml)" % (key, key, document.get("id"), ratio.covers_why))
        elif named not in datasheet:
            problems.append("known_good.%s: its floor reads datasheet.%s, which this baseline does not give" % (key, named))
    return problems


def with_floors(document: Dict[str, Any]) -> Dict[str, Any]:
    """The baseline (its datasheet already in judged units) with each datasheet_floor entry given its value, unit and
    source; floor_problems(document) must be empty."""
    derived = copy.deepcopy(document)
    for key, entry in (derived.get("known_good") or {}).items():
        if not is_floor(entry):
            continue
        ratio = FLOOR_RATIOS[key]
        entry.update(_floor(ratio, derived["datasheet"][ratio.datasheet]))
    return derived


def _floor(ratio: FloorRatio, peak: Dict[str, Any]) -> Dict[str, Any]:
    """{value, unit, source} of one floor: the ratio times the datasheet entry (in judged units)."""
    return {"value": round(ratio.ratio * peak["value"], 1), "unit": peak["unit"],
            "source": "datasheet floor: %g x the datasheet's %g %s (%s); ratio from %s" % (
                ratio.ratio, peak["value"], peak["unit"], peak.get("source", "no source given"), ratio.evidence)}


def floors_of(document: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{known_good key: {value, unit, source}}: the floor of every ratio that covers the baseline's SKU and whose
    datasheet value it gives (its datasheet in judged units), whether its known_good entry is a floor, a measurement or
    absent. What a calibration's median must not fall under: a measured reference replaces a floor in judging, never
    the datasheet's lower bound on what a healthy GPU does."""
    found: Dict[str, Dict[str, Any]] = {}
    datasheet = document.get("datasheet") or {}
    for key, ratio in FLOOR_RATIOS.items():
        peak = datasheet.get(ratio.datasheet)
        if not covers(ratio, document.get("id")) or not isinstance(peak, dict) or not isinstance(peak.get("value"), (int, float)):
            continue
        found[key] = _floor(ratio, peak)
    return found
