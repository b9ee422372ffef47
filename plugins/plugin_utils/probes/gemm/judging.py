"""gemm: matmul throughput per dtype over shapes, each on the roofline, burst and sustained at the power limit.

Its roofline needs the memory bandwidth membw measured on each GPU and the dense peak of each dtype from the SKU's
baseline: both are derived on the controller from this run's stored results. A parameter the user gave in the
inventory always wins; when nothing can be derived the probe measures or calibrates itself.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, List, Optional, Tuple

from ...probe_kit.kit import (
    Condition, Device, Measurement, Missing, measured, not_measured, finite, is_unavailable, ProbeJudging)
from .correctness_checks import CORRECTNESS_CHECKS
from .metrics import STATE_RATES
from .together_checks import TOGETHER_CHECKS

STATE_WORDS = {"burst": "burst (from idle, before the power cap)", "sustained": "sustained (steady state at the power limit)"}
LOWER_POWER_LIMIT = ("its sustained rate was measured at a %(measured)g W power limit and the known-good at %(reference)g W, so "
                     "the two are not compared: the lowered limit is a configuration finding (health.power_limit), not a slow GPU")


def _state_of(rate: Dict[str, Any], method: str, what: str) -> Tuple[Dict[str, Any], Optional[Missing]]:
    """(the dtype's burst or sustained record, None), or ({}, why it is missing: a skip or an error)."""
    states = rate.get("power_states")
    if states is None:
        return {}, not_measured(what, "this gemm result has no burst or sustained timing (written by a gemm probe older than "
                                "the two named states); run the gemm probe again", "skip", listed_first=True)
    if is_unavailable(states):
        return {}, not_measured(what, states["unavailable"], "error" if "failed" in states["unavailable"] else "skip", listed_first=True)
    state = states.get(method, {"unavailable": "no %s timing in the result" % method})
    if is_unavailable(state):
        return {}, not_measured(what, state["unavailable"], listed_first=True)
    return state, None


def _state_measurement(entry: Dict[str, Any], dtype: str, method: str) -> Optional[Measurement]:
    """One state's rate of one device entry; None where the entry's dtypes do not name the dtype."""
    rates = entry.get("dtypes") if isinstance(entry.get("dtypes"), dict) else {}
    rate = rates.get(dtype)
    states = rate.get("power_states") if isinstance(rate, dict) and isinstance(rate.get("power_states"), dict) else {}
    held = states.get(method) if isinstance(states.get(method), dict) else {}
    what = "the %s %s matmul rate" % (dtype, STATE_WORDS[method])
    measurement = Measurement.of(STATE_RATES[(dtype, method)], Device.of(entry.get("device")), what, value=measured(held.get("tflops")))
    if measurement.device.kind != "cuda":
        return measurement
    if entry.get("error") or not rates:
        return replace(measurement, missing=not_measured(what, entry.get("error") or "no dtype was measured"))
    if not isinstance(rate, dict):
        return None
    if is_unavailable(rate):
        return replace(measurement, missing=Missing("%s" % (rate["unavailable"],), "skip", "%s matmul is not offered here: %s"
                                                    % (dtype, rate["unavailable"]), listed_first=True))
    state, missing = _state_of(rate, method, what)
    if missing is not None:
        return replace(measurement, missing=missing)
    detail = " on %s" % (rate.get("power_states") or {}).get("case", "?")
    if method == "burst" and state.get("power_cap_reached"):
        detail += " (%s)" % state.get("note", "the power cap engaged inside a burst window")
    conditions = ()
    if method == "sustained" and "power_limit_w" in state:
        conditions = (Condition("power_limit_w", state["power_limit_w"], "power limit", LOWER_POWER_LIMIT),)
    return replace(measurement, samples=tuple(finite(state.get("repeats_tflops"))), detail=detail, conditions=conditions)


def gemm_measurements(data: Dict[str, Any]) -> List[Measurement]:
    """Per device, the calibration shape's burst and sustained rates of bf16 and fp8 (median of their repeats), the
    sustained ones with the power limit they were measured at."""
    found = []
    devices = data.get("devices") if isinstance(data, dict) else None
    for entry in devices if isinstance(devices, list) else []:
        if isinstance(entry, dict):
            measured_states = (_state_measurement(entry, dtype, method) for dtype, method in STATE_RATES)
            found.extend(measurement for measurement in measured_states if measurement is not None)
    return found


JUDGING = ProbeJudging(
    checks={**CORRECTNESS_CHECKS, **TOGETHER_CHECKS},
    measurements=gemm_measurements,
    baseline_checks={"bf16_burst": STATE_RATES[("bf16", "burst")], "bf16_sustained": STATE_RATES[("bf16", "sustained")],
                     "fp8_burst": STATE_RATES[("fp8_e4m3", "burst")], "fp8_sustained": STATE_RATES[("fp8_e4m3", "sustained")]},
    busy_distorts=frozenset(TOGETHER_CHECKS),
)
