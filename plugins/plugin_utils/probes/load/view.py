"""Dossier section of the load probe: clocks, power and temperature over time, idle against active, what held it back."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    Cell, cell, table, format_quantity, format_number, MISSING, dig, number_or_none, line_chart, clock_event_table,
    ProbeSection)
from .correctness_view import correctness_table

PLOTTED = (("sm_clock_mhz", "SM clock under load", "MHz"), ("power_w", "Power draw under load", "W"),
           ("temperature_c", "GPU temperature under load", "°C"))


def _gpus(data: Any) -> List[Dict[str, Any]]:
    gpus = dig(data, "gpus")
    return [gpu for gpu in gpus if isinstance(gpu, dict)] if isinstance(gpus, list) else []


def _number_text(value: Any) -> str:
    return format_number(value) if number_or_none(value) is not None else str(value)


def _label(gpu: Dict[str, Any]) -> str:
    return "GPU %s" % gpu.get("index")


def _plots(data: Any, gpus: List[Dict[str, Any]]) -> List[str]:
    samples = dig(data, "samples")
    if not isinstance(samples, dict) or not isinstance(samples.get("rows_per_gpu"), dict):
        return []
    columns = samples.get("columns") or []
    plots = []
    for key, title, unit in PLOTTED:
        if key not in columns:
            continue
        position = columns.index(key)
        series = []
        for gpu in gpus:
            rows = samples["rows_per_gpu"].get(gpu.get("uuid")) or []
            points = [(float(row[0]), float(row[position])) for row in rows
                      if isinstance(row, list) and len(row) > position and number_or_none(row[0]) is not None
                      and number_or_none(row[position]) is not None]
            for snapshot in (gpu.get("idle_before"), gpu.get("idle_after")):
                if isinstance(snapshot, dict) and number_or_none(snapshot.get("t_s")) is not None \
                        and number_or_none(snapshot.get(key)) is not None:
                    points.append((float(snapshot["t_s"]), float(snapshot[key])))
            if points:
                series.append((_label(gpu), points))
        if series:
            plots.append(line_chart("%s (samples every %s s; idle snapshots before 0 and after the end)" % (
                title, samples.get("scheduled_interval_s", "?")), series, "s", unit,
                x_name="time since the load started", y_name=title.split(" under load", maxsplit=1)[0],
                data_note="Every sample: the table 'Every measurement' below (samples.rows_per_gpu); the medians and "
                          "maxima: 'Idle before, under load (median, max), idle after'."))
    return plots


def _before_active_after(gpu: Dict[str, Any], key: str) -> List[Cell]:
    before = gpu.get("idle_before") if isinstance(gpu.get("idle_before"), dict) else {}
    after = gpu.get("idle_after") if isinstance(gpu.get("idle_after"), dict) else {}
    active = dig(gpu, "active", key)
    return [cell(key, before.get(key, MISSING)),
            cell(key, active.get("median", MISSING)) if isinstance(active, dict) else cell(key, active),
            cell(key, active.get("max", MISSING)) if isinstance(active, dict) else Cell("—"),
            cell(key, after.get(key, MISSING))]


def load_view(data: Any) -> Dict[str, Any]:
    gpus = _gpus(data)
    idle_rows, verdict_rows = [], []
    for gpu in gpus:
        for key, words in (("sm_clock_mhz", "SM clock"), ("power_w", "power"), ("temperature_c", "temperature"),
                           ("gpu_util_pct", "utilisation")):
            idle_rows.append([Cell(_label(gpu)), Cell(words)] + _before_active_after(gpu, key))
        clocks = gpu.get("clocks") if isinstance(gpu.get("clocks"), dict) else {}
        throttle = gpu.get("throttle") if isinstance(gpu.get("throttle"), dict) else {}
        power = gpu.get("power") if isinstance(gpu.get("power"), dict) else {}
        reasons = throttle.get("reasons") if isinstance(throttle.get("reasons"), dict) else {}
        reason_text = ", ".join("%s %s" % (name, format_quantity(100 * (entry.get("fraction_active") or 0), "%"))
                                for name, entry in sorted(reasons.items()) if isinstance(entry, dict)) or "none"
        load = gpu.get("load") if isinstance(gpu.get("load"), dict) else {}
        if load.get("error"):
            verdict_rows.append([Cell(_label(gpu)), Cell("failed", str(load["error"]), "bad")] + [Cell("—")] * 4)
            continue
        slowed = throttle.get("hardware_slowdown") or throttle.get("thermal")
        verdict_rows.append([Cell(_label(gpu)), cell("achieved_tflops", load.get("achieved_tflops_active", MISSING)),
                             Cell(str(clocks.get("note", "—")), str(clocks.get("basis", "")), "bad" if clocks.get("basis") == "did_not_rise" else ""),
                             Cell(reason_text, "", "bad" if slowed else ""),
                             Cell("median %s, max %s of %s; %s of samples above" % (
                                 format_quantity(power.get("median_w"), "W"), format_quantity(power.get("max_w_load"), "W"),
                                 format_quantity(power.get("limit_w"), "W"),
                                 format_quantity(100 * (power.get("fraction_over_limit") or 0), "%")) if power else "—")])
    process_rows = []
    processes = dig(data, "processes")
    for entry in (processes.get("seen") or []) if isinstance(processes, dict) else []:
        if isinstance(entry, dict):
            name = entry.get("name")
            process_rows.append([Cell(str(entry.get("pid"))), cell("name", name), Cell(", ".join(entry.get("gpus") or [])),
                                 Cell("the probe" if entry.get("own") else "another process", "", "" if entry.get("own") else "bad")])
    plan = dig(data, "plan")
    cooldown = dig(data, "cooldown")
    notes = []
    if isinstance(plan, dict):
        notes.append("%s s of %s %s×%s matmuls on every GPU at once, sampled every %s s; medians exclude the first %s s." % (
            _number_text(plan.get("duration_s")), plan.get("dtype"), plan.get("matmul_n"), plan.get("matmul_n"),
            _number_text(plan.get("sample_interval_s")), _number_text(plan.get("warmup_s"))))
    if isinstance(cooldown, dict) and cooldown.get("note"):
        notes.append("Cool-down: %s." % cooldown["note"])
    clock_events = clock_event_table(gpus, "clock_event_durations_window", "Time in each clock-event reason during the load "
                                     "window (NVML's counters; share of the window)", "window_s", "bad")
    shown = [found for found in (correctness_table(gpus), clock_events) if found["rows"]]
    return {"note": " ".join(notes), "plots": _plots(data, gpus), "tables": [
        table("Under load", ["GPU", "achieved TFLOP/s", "clocks", "clock-event reasons (share of active samples)", "power"],
              verdict_rows, "no GPU was loaded")] + shown + [
        table("Idle before, under load (median, max), idle after", ["GPU", "what", "idle before", "active median", "active max",
                                                                    "idle after"], idle_rows, "no snapshot"),
        table("Processes on the GPUs during the load", ["pid", "name", "GPUs", "whose"], process_rows, "none seen")]}


SECTION = ProbeSection(load_view)
