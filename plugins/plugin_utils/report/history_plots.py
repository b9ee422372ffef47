# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dossier's history plots (docs/history.md, "Pictures"): per headline metric (a catalogue metric held to a
known-good value: judge/trends.headline_specs), a small SVG of this host's last runs, one line per GPU, with the fleet
median of its SKU group and the known-good floor its check failed below, and under it a strip of the host's verdicts.
The earlier runs come from the run index (history/host_runs.py), this run from its judgement. No script, every text
escaped."""
from __future__ import annotations

import math
import os
import sqlite3
from html import escape
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..history.host_runs import UNKNOWN_SKU, HostRuns, host_runs
from ..judge.history_model import SeriesKey, series_key
from ..judge.model import VERDICT_WORDS, FleetJudgement, HostVerdict
from ..judge.trends import headline_specs
from ..metric_spec import MetricSpec
from ..probe_kit.registry import probe_catalogue
from ..store.stored_run import HostModel, RunModel
from .history_page import OTHER_COLOUR, VERDICT_COLOURS
from .markup import BuiltHtml
from .svg_plots import SERIES_COLOURS, linear_ticks, tick_label
from .number_format import format_quantity
from .values import format_number

WIDTH, PLOT_HEIGHT, LEFT, RIGHT, TOP = 420, 110, 52, 12, 22
STRIP = 10  # the verdict strip's height, under the plot
MEDIAN_COLOUR, FLOOR_COLOUR = "#555", "#c62828"


def known_good_floors(verdict: HostVerdict, spec: MetricSpec) -> Dict[SeriesKey, Tuple[float, str]]:
    """{series key: (the value below which the headline's check fails, in words)} of the metric: what the judge found
    of this run's checks and the host's rules (judge/trend_step.fail_floors), the floor slow decay counts days to."""
    return {key: (value, "fail floor %s (%s)" % (format_quantity(value, spec.unit), words))
            for key, (value, words) in verdict.floors.items() if key[0] == spec.id}


def _series_label(key: SeriesKey, gpu_index: Mapping[SeriesKey, int], keys: Sequence[SeriesKey]) -> str:
    """"GPU 0"; "GPU 0 (GPU-3cb5a54b)" where two series share an index (a GPU swapped, or another machine under the
    host's name); a device or "host" where it is no GPU's."""
    if key in gpu_index:
        shared = sum(1 for other in keys if gpu_index.get(other) == gpu_index[key]) > 1
        return "GPU %d (%s)" % (gpu_index[key], key[1][:12]) if shared else "GPU %d" % gpu_index[key]
    return key[1] or "host"


def history_plot(title: str, unit: str, runs: Sequence[Tuple[str, str, str]], series: Sequence[Tuple[str, Mapping[str, float]]],
                 medians: Mapping[str, float], floors: Sequence[Tuple[float, str]]) -> BuiltHtml:
    """One headline's plot: runs (run id, date, verdict) oldest first, the last this one; series (label, {run id: value});
    the fleet median {run id: median}; floors (value, words) as dashed lines."""
    numbers = [value for unused, values in series for value in values.values()] + list(medians.values()) + [value for value, unused in floors]
    low, high, ticks, decimals = linear_ticks(min(numbers), max(numbers), count=4, loose=True)
    step = (WIDTH - LEFT - RIGHT) / max(1, len(runs))
    x_of = {run_id: LEFT + step * (position + 0.5) for position, (run_id, unused, unused_verdict) in enumerate(runs)}

    def y_of(value: float) -> float:
        return TOP + PLOT_HEIGHT - (value - low) / ((high - low) or 1.0) * PLOT_HEIGHT
    height = TOP + PLOT_HEIGHT + 6 + STRIP + 18
    described = "%s over the host's last %d runs, this one last; %s" % (title, len(runs), "; ".join(
        "%s %s" % (label, ", ".join(format_number(values[run_id]) for run_id, unused, unused_v in runs if run_id in values))
        for label, values in series))
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" class="history-plot" width="%d" height="%d" viewBox="0 0 %d %d" role="img">'
             % (WIDTH, height, WIDTH, height), "<title>%s</title><desc>%s</desc>" % (escape(title), escape(described)),
             '<text x="%d" y="14" font-size="12" font-weight="600" fill="#222">%s</text>' % (LEFT, escape("%s (%s)" % (title, unit)))]
    for tick in ticks:
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e6e6e6"/><text x="%d" y="%.1f" font-size="10" '
                     'text-anchor="end" fill="#555">%s</text>' % (LEFT, WIDTH - RIGHT, y_of(tick), y_of(tick), LEFT - 4, y_of(tick) + 3,
                                                                  escape(tick_label(tick, decimals))))
    for value, words in floors:
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="5 3"><title>%s</title></line>'
                     % (LEFT, WIDTH - RIGHT, y_of(value), y_of(value), FLOOR_COLOUR, escape(words)))
    parts += _lines([("fleet median", medians)], runs, x_of, y_of, unit, MEDIAN_COLOUR, dashed=True)
    for position, (label, values) in enumerate(series):
        parts += _lines([(label, values)], runs, x_of, y_of, unit, SERIES_COLOURS[position % len(SERIES_COLOURS)])
    parts += _verdict_strip(runs, x_of, step, TOP + PLOT_HEIGHT + 6)
    parts.append("</svg>")
    return BuiltHtml("".join(parts))


def _lines(series: Sequence[Tuple[str, Mapping[str, float]]], runs: Sequence[Tuple[str, str, str]], x_of: Mapping[str, float],
           y_of: Any, unit: str, colour: str, dashed: bool = False) -> List[str]:
    parts = []
    for label, values in series:
        points = [(x_of[run_id], y_of(values[run_id]), run_id, values[run_id]) for run_id, unused, unused_v in runs if run_id in values]
        if not points:
            continue
        parts.append('<polyline fill="none" stroke="%s" stroke-width="%s"%s points="%s"><title>%s</title></polyline>'
                     % (colour, "1.5" if dashed else "2", ' stroke-dasharray="5 3"' if dashed else "",
                        " ".join("%.1f,%.1f" % (x, y) for x, y, unused, unused_v in points), escape(label)))
        parts += ['<circle cx="%.1f" cy="%.1f" r="%s" fill="%s"><title>%s</title></circle>'
                  % (x, y, "1.5" if dashed else "2.5", colour, escape("%s, run %s: %s %s" % (label, run_id, format_number(value), unit)))
                  for x, y, run_id, value in points]
    return parts


def _verdict_strip(runs: Sequence[Tuple[str, str, str]], x_of: Mapping[str, float], step: float, top: float) -> List[str]:
    parts = []
    for run_id, date, verdict in runs:
        parts.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>'
                     % (x_of[run_id] - step * 0.4, top, step * 0.8, STRIP, VERDICT_COLOURS.get(verdict, OTHER_COLOUR),
                        escape("run %s (%s): %s" % (run_id, date, VERDICT_WORDS.get(verdict, verdict)))))
    if runs:
        parts.append('<text x="%d" y="%.1f" font-size="10" fill="#555">%s</text>' % (LEFT, top + STRIP + 13, escape(runs[0][1])))
        parts.append('<text x="%d" y="%.1f" font-size="10" text-anchor="end" fill="#555">this run</text>' % (WIDTH - RIGHT, top + STRIP + 13))
    return parts


def _current(verdict: HostVerdict, specs: Mapping[str, MetricSpec]) -> Tuple[Dict[SeriesKey, float], Dict[SeriesKey, int]]:
    values, gpu_index = {}, {}
    for metric in verdict.metrics:
        value = metric.get("value")
        if metric.get("id") not in specs or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            continue
        key = series_key(metric["id"], metric.get("gpu_uuid"), metric.get("device"))
        values[key] = float(value)
        if metric.get("gpu_index") is not None:
            gpu_index[key] = metric["gpu_index"]
    return values, gpu_index


def _date(started: str) -> str:
    return started[:10] if len(started) >= 10 else started


def history_plots_view(host: HostModel, run: RunModel, judgement: Optional[FleetJudgement]) -> Dict[str, Any]:
    """What the dossier's "History" section shows: {"plots": [...], "runs": n, "problem": why none} ({} where the run is
    not judged or its results directory has no run index: the dossier then has no such section)."""
    verdict = judgement.hosts.get(host.name) if judgement is not None else None
    if verdict is None:
        return {}
    specs = headline_specs(probe_catalogue().metric_specs)
    try:
        earlier = host_runs(os.path.dirname(os.path.abspath(run.run_dir)), run.run_id, host.name, sorted(specs))
    except (OSError, sqlite3.Error) as exc:
        return {"plots": [], "runs": 0, "problem": "the run index could not be read (%s: %s)" % (type(exc).__name__, exc)}
    if earlier is None:
        return {}
    values, gpu_index = _current(verdict, specs)
    runs = [(run_id, _date(started), shown) for run_id, started, shown in earlier.runs] + [(run.run_id, "this run", verdict.verdict)]
    statistics = judgement.fleet_statistics.get(verdict.sku or UNKNOWN_SKU, {})
    plots = [_metric_plot(spec, verdict, earlier, values, {**earlier.gpu_index, **gpu_index}, runs, statistics)
             for unused_id, spec in sorted(specs.items())]
    return {"plots": [plot for plot in plots if plot is not None], "runs": len(runs), "problem": ""}


def _metric_plot(spec: MetricSpec, verdict: HostVerdict, earlier: HostRuns, values: Mapping[SeriesKey, float],
                 gpu_index: Mapping[SeriesKey, int], runs: Sequence[Tuple[str, str, str]], statistics: Mapping[str, Any]
                 ) -> Optional[Dict[str, Any]]:
    this_run = runs[-1][0]
    keys = sorted({key for key in list(values) + list(earlier.values) if key[0] == spec.id},
                  key=lambda key: (gpu_index.get(key, -1), key[1]))
    if not keys:
        return None
    series = [(_series_label(key, gpu_index, keys), {**earlier.values.get(key, {}), **({this_run: values[key]} if key in values else {})})
              for key in keys]
    medians = dict(earlier.medians.get(spec.id, {}))
    median = (statistics.get(spec.id) or {}).get("median")
    if isinstance(median, (int, float)) and not isinstance(median, bool) and math.isfinite(median):
        medians[this_run] = float(median)
    floors = sorted(set(known_good_floors(verdict, spec).values()))
    return {"metric": spec.id, "title": spec.title, "plot": history_plot(spec.title, spec.unit, runs, series, medians, floors),
            "series": [label for label, unused in series], "floors": [words for unused, words in floors],
            "median_runs": len(medians)}
