# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The units a baseline may state its numbers in: a closed list per quantity, each with its exact factor to the unit
the judge measures that quantity in.

Pure Python. schemas/baseline.schema.json enumerates the same units (tests/unit/judge/test_baseline_units.py holds
them equal); rules_and_baselines.load_baselines converts every value to its quantity's unit once, so the judge only
ever compares GB/s with GB/s. A unit outside the list is refused, never read as another (docs/judge.md).
"""
from __future__ import annotations

from typing import Dict, Tuple

# quantity -> (the unit the judge measures it in, {unit a baseline may state: factor to that unit})
QUANTITY_UNITS: Dict[str, Tuple[str, Dict[str, float]]] = {
    "bandwidth": ("GB/s", {"GB/s": 1.0, "TB/s": 1e3, "MB/s": 1e-3,
                           "GiB/s": 2 ** 30 / 1e9, "TiB/s": 2 ** 40 / 1e9, "MiB/s": 2 ** 20 / 1e9}),
    "compute rate": ("TFLOP/s", {"TFLOP/s": 1.0, "PFLOP/s": 1e3, "GFLOP/s": 1e-3}),
    "power": ("W", {"W": 1.0, "kW": 1e3}),
    "clock": ("MHz", {"MHz": 1.0, "GHz": 1e3}),
}
BASELINE_UNITS = tuple(unit for unused_base, factors in QUANTITY_UNITS.values() for unit in factors)


def allowed_units() -> str:
    """The closed list in words: "GB/s, TB/s, ... (bandwidth); TFLOP/s, ... (compute rate); ..."."""
    return "; ".join("%s (%s)" % (", ".join(factors), quantity) for quantity, (unused, factors) in QUANTITY_UNITS.items())


def to_judged_unit(value: float, unit: str) -> Tuple[float, str]:
    """(value in its quantity's judged unit, that unit): 4.2579 TB/s -> (4257.9, "GB/s"); ValueError for another unit."""
    for base, factors in QUANTITY_UNITS.values():
        if unit in factors:
            return value * factors[unit], base
    raise ValueError("unit %r is not one a baseline may state; allowed: %s" % (unit, allowed_units()))
