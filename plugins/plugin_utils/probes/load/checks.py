# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the load probe: under sustained matrix load the clocks rise, nothing slows the GPU down in hardware or for
heat, power stays within its limit, and no process other than the probe uses the GPUs."""
from __future__ import annotations

from typing import Any, Callable, Dict, List

from ...probe_kit.kit import gpu_label, make_check, param_source, reads_params, Check, format_quantity, is_unavailable


def _gpus(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    gpus = data.get("gpus")
    return [gpu for gpu in gpus if isinstance(gpu, dict) and "clocks" in gpu] if isinstance(gpus, list) else []


def _part(gpu: Dict[str, Any], key: str) -> Dict[str, Any]:
    value = gpu.get(key)
    return value if isinstance(value, dict) and not is_unavailable(value) else {}


def clocks_rose(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    checks = []
    for gpu in _gpus(data):
        clocks = _part(gpu, "clocks")
        basis, note = clocks.get("basis"), clocks.get("note", "")
        status = {"rose": "pass", "idle_at_max": "pass", "did_not_rise": "fail"}.get(basis, "error")
        words = "%s: %s" % (gpu_label(gpu), note or "no clock reading")
        if status == "fail":
            words += "; a GPU that does not clock up under load is held back (application clocks, a power brake, a cap)"
        checks.append(make_check(rule, host, status, words, gpu, value=clocks.get("active_median_sm_clock_mhz"), unit="MHz",
                                 reference=clocks.get("idle_sm_clock_mhz"), reference_source="idle snapshot before the load",
                                 threshold="active median > idle + %s MHz, or idle already at the maximum" % clocks.get("threshold_mhz")))
    return checks


def no_slowdown(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    checks = []
    for gpu in _gpus(data):
        throttle = _part(gpu, "throttle")
        if not throttle:
            continue
        seen = throttle.get("slowdown_reasons_seen") or []
        cap = throttle.get("sw_power_cap_fraction")
        cap_words = "; sw_power_cap in %s of the samples (the software power cap at the power limit: expected under full load)" % (
            format_quantity(100 * cap, "%")) if isinstance(cap, (int, float)) and cap > 0 else ""
        if throttle.get("hardware_slowdown") or throttle.get("thermal") or seen:
            checks.append(make_check(rule, host, "fail", "%s: %s under load, first at %s%s; check cooling, the power supply and the "
                                     "board before trusting any number from this GPU" % (
                                         gpu_label(gpu), ", ".join(seen) or "a hardware or thermal slowdown",
                                         format_quantity(throttle.get("first_slowdown_s"), "s"), cap_words), gpu,
                                     value=", ".join(seen) or True,
                                     reference="none", threshold="no hw_slowdown, hw_thermal_slowdown, sw_thermal_slowdown, "
                                     "hw_power_brake_slowdown"))
        else:
            checks.append(make_check(rule, host, "pass", "%s: no hardware or thermal slowdown during the load%s" % (gpu_label(gpu), cap_words),
                                     gpu, value="none", reference="none", threshold="no hardware or thermal slowdown"))
    return checks


@reads_params("max_fraction_over_limit")
def power_within_limit(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    allowed = float(rule["params"]["max_fraction_over_limit"])
    checks = []
    for gpu in _gpus(data):
        power = _part(gpu, "power")
        fraction = power.get("fraction_over_limit")
        if not isinstance(fraction, (int, float)):
            continue
        status = "pass" if fraction <= allowed else "fail"
        words = "%s: power median %s, max %s against a limit of %s (+%s margin): %s of the samples above" % (
            gpu_label(gpu), format_quantity(power.get("median_w"), "W"), format_quantity(power.get("max_w_load"), "W"),
            format_quantity(power.get("limit_w"), "W"), format_quantity(power.get("margin_pct"), "%"),
            format_quantity(100 * fraction, "%"))
        if status == "fail":
            words += "; the GPU draws more than its limit allows: check the limit (nvidia-smi -q -d POWER) and the board"
        checks.append(make_check(rule, host, status, words, gpu, value=round(100 * fraction, 3), unit="%",
                                 reference=round(100 * allowed, 3), reference_source=param_source(rule, "max_fraction_over_limit"),
                                 threshold="<= %g %% of the samples above the limit" % (100 * allowed)))
    return checks


def no_unexpected_process(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    processes = data.get("processes")
    if not isinstance(processes, dict) or is_unavailable(processes):
        return []
    unexpected = [entry for entry in processes.get("unexpected") or [] if isinstance(entry, dict)]
    described = ", ".join("pid %s (%s) on %s" % (
        entry.get("pid"), entry["name"] if isinstance(entry.get("name"), str) else "name unknown", ", ".join(entry.get("gpus") or []))
        for entry in unexpected)
    if not unexpected:
        return [make_check(rule, host, "pass", "no process other than the probe used the GPUs during the load", value=0, reference=0,
                           threshold="no other process")]
    if processes.get("own_listed") is False:
        return [make_check(rule, host, "warn", "processes during the load: %s; the probe never saw its own pid in NVML's list (a PID "
                           "namespace), so this may be the probe itself" % described, value=len(unexpected), reference=0,
                           threshold="no other process")]
    return [make_check(rule, host, "fail", "another process used the GPUs during the load: %s; it shares the GPUs with every "
                       "measurement: stop it or validate this host later" % described, value=len(unexpected), reference=0,
                       threshold="no other process")]


LOAD_CHECKS: Dict[str, Callable[..., List[Check]]] = {
    "clocks_rose": clocks_rose,
    "no_slowdown": no_slowdown,
    "power_within_limit": power_within_limit,
    "no_unexpected_process": no_unexpected_process,
}
