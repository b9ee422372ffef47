"""Small inline SVG charts for the HTML report: no script, no fonts or styles fetched, every text escaped."""
from __future__ import annotations

import math
from html import escape
from typing import List, Optional, Sequence, Tuple

from .report_values import format_number

FONT = 'font-family="sans-serif" font-size="11"'
SERIES_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def _text(x: float, y: float, content: str, anchor: str = "start", extra: str = "") -> str:
    return '<text x="%.1f" y="%.1f" text-anchor="%s" %s%s>%s</text>' % (
        x, y, anchor, FONT, extra, escape(content))


def _with_unit(value: float, unit: str) -> str:
    return "%s %s" % (format_number(value), unit) if unit else format_number(value)


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def bar_chart(title: str, labels: Sequence[str], values: Sequence[Optional[float]], unit: str,
              references: Sequence[Tuple[str, Optional[float]]] = (),
              markers: Sequence[Sequence[Tuple[str, Optional[float]]]] = (),
              width: int = 560) -> str:
    """Horizontal bars, one per label; a value that is not a finite number reads "n/a".

    references: (name, value) ticks drawn on every bar (e.g. a datasheet peak);
    markers[i]: (name, value) ticks drawn on bar i alone (e.g. that GPU's power limit).
    """
    ticks = [list(references) + list(markers[index] if index < len(markers) else ())
             for index in range(len(labels))]
    label_width, value_width, bar_height, gap, top = 150, 110, 16, 6, 26
    plot_width = width - label_width - value_width
    marker_values = [value for row in ticks for unused_name, value in row if _finite(value)]
    bar_values = [value for value in values if _finite(value)]
    scale_max = max([0.0] + [abs(v) for v in bar_values] + [abs(v) for v in marker_values]) or 1.0
    height = top + len(labels) * (bar_height + gap) + 8
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" role="img" width="%d" height="%d" viewBox="0 0 %d %d">'
             % (width, height, width, height),
             "<title>%s</title>" % escape(title),
             _text(0, 14, title, extra=' font-weight="bold"')]
    for index, label in enumerate(labels):
        y = top + index * (bar_height + gap)
        parts.append(_text(label_width - 6, y + bar_height - 4, str(label), anchor="end"))
        value = values[index] if index < len(values) else None
        if _finite(value):
            bar_length = plot_width * abs(value) / scale_max
            parts.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="#4c78a8"><title>%s</title></rect>'
                         % (label_width, y, bar_length, bar_height, escape("%s: %s" % (label, _with_unit(value, unit)))))
            parts.append(_text(label_width + plot_width + 6, y + bar_height - 4, _with_unit(value, unit)))
        else:
            parts.append(_text(label_width + plot_width + 6, y + bar_height - 4, "n/a", extra=' fill="#b00"'))
        for name, marker in ticks[index]:
            if not _finite(marker):
                continue
            x = label_width + plot_width * abs(marker) / scale_max
            parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d62728" stroke-width="2">'
                         "<title>%s</title></line>"
                         % (x, y - 2, x, y + bar_height + 2, escape("%s: %s" % (name, _with_unit(marker, unit)))))
    parts.append("</svg>")
    return "".join(parts)


def compact_number(value: float) -> str:
    """1, 10, 100, 1k, 10k, 1M, 1G: short labels for the decades of a log axis."""
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return format_number(round(value / factor, 3)) + suffix
    return format_number(value)


def _ticks(low: float, high: float, log: bool) -> List[float]:
    if log:
        return [10.0 ** exponent for exponent in range(math.floor(low), math.ceil(high) + 1)]
    step = (high - low) / 4 or 1.0
    return [low + step * index for index in range(5)]


def line_chart(title: str, series: Sequence[Tuple[str, Sequence[Tuple[float, float]]]], x_unit: str, y_unit: str,
               log_x: bool = False, marker_x: Optional[float] = None, marker_label: str = "",
               width: int = 560, height: int = 300, markers: Sequence[Tuple[float, str]] = ()) -> str:
    """Lines of (x, y) points, one per named series; log_x for sweeps over sizes.

    marker_x draws one vertical line; markers more of them, each (x, label), in the colour of the series of the same index.
    """
    left, right, top, bottom = 60, 140, 26, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    points = [[(x, y) for x, y in pts if _finite(x) and _finite(y) and (x > 0 or not log_x)] for unused_name, pts in series]
    shown_markers = [(x, label) for x, label in markers if _finite(x) and (x > 0 or not log_x)]
    xs = [x for pts in points for x, unused_y in pts] + ([marker_x] if _finite(marker_x) and (marker_x > 0 or not log_x) else [])
    xs += [x for x, unused_label in shown_markers]
    ys = [y for pts in points for unused_x, y in pts]
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" role="img" width="%d" height="%d" viewBox="0 0 %d %d">'
             % (width, height, width, height),
             "<title>%s</title>" % escape(title),
             _text(0, 14, title, extra=' font-weight="bold"')]
    if not xs or not ys:
        parts.append(_text(left, top + 20, "no data to plot"))
        parts.append("</svg>")
        return "".join(parts)

    def to_axis(x: float) -> float:
        return math.log10(x) if log_x else x

    x_low, x_high = min(map(to_axis, xs)), max(map(to_axis, xs))
    y_low, y_high = min([0.0] + ys), max(ys)
    x_span, y_span = (x_high - x_low) or 1.0, (y_high - y_low) or 1.0

    def px(x: float) -> float:
        return left + plot_w * (to_axis(x) - x_low) / x_span

    def py(y: float) -> float:
        return top + plot_h - plot_h * (y - y_low) / y_span

    parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (left, top, plot_w, plot_h))
    for tick in _ticks(y_low, y_high, False):
        parts.append(_text(left - 4, py(tick) + 4, format_number(tick), anchor="end"))
    for tick in _ticks(x_low, x_high, log_x):
        if log_x and not (x_low <= math.log10(tick) <= x_high):
            continue
        parts.append(_text(px(tick), top + plot_h + 14, compact_number(tick) if log_x else format_number(tick), anchor="middle"))
    parts.append(_text(left + plot_w / 2, height - 4, x_unit, anchor="middle"))
    parts.append(_text(4, top - 4, y_unit))
    for index, ((name, unused_values), pts) in enumerate(zip(series, points)):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        if pts:
            path = " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in sorted(pts))
            parts.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>'
                         % (colour, path, escape(str(name))))
        legend_y = top + 12 + index * 14
        parts.append('<rect x="%d" y="%d" width="10" height="3" fill="%s"/>' % (left + plot_w + 8, legend_y - 4, colour))
        parts.append(_text(left + plot_w + 22, legend_y, str(name)))
    if _finite(marker_x) and (marker_x > 0 or not log_x):
        x = px(marker_x)
        parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#d62728" stroke-dasharray="4 3"/>'
                     % (x, top, x, top + plot_h))
        parts.append(_text(x + 3, top + 10, marker_label or _with_unit(marker_x, x_unit), extra=' fill="#d62728"'))
    for index, (marker, label) in enumerate(shown_markers):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        x = px(marker)
        parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-dasharray="4 3"><title>%s</title></line>'
                     % (x, top, x, top + plot_h, colour, escape("%s: %s" % (label, _with_unit(marker, x_unit)))))
        parts.append(_text(x + 3, top + 10 + 12 * index, label, extra=' fill="%s"' % colour))
    parts.append("</svg>")
    return "".join(parts)


def _heat_colour(fraction: float) -> str:
    """Red (0) through yellow to green (1), so a slow pair stands out."""
    fraction = min(1.0, max(0.0, fraction))
    if fraction < 0.5:
        red, green = 220, int(60 + 320 * fraction)
    else:
        red, green = int(220 - 340 * (fraction - 0.5)), 190
    return "#%02x%02x%02x" % (max(0, red), min(255, green), 60)


def heatmap_chart(title: str, labels: Sequence[str], values: Sequence[Sequence[Optional[float]]], unit: str,
                  notes: Sequence[Sequence[str]] = (), cell_size: int = 64) -> str:
    """A square matrix (row = source, column = destination): each cell coloured by its value against the largest,
    printed with the value and its note (e.g. the link class); a missing value is grey with its note."""
    count = len(labels)
    left, top = 70, 56
    width, height = max(560, left + cell_size * count + 20), top + cell_size * count + 30
    finite = [value for row in values for value in row if _finite(value)]
    highest = max(finite) if finite else 0.0
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" role="img" width="%d" height="%d" viewBox="0 0 %d %d">'
             % (width, height, width, height),
             "<title>%s</title>" % escape(title),
             _text(0, 14, title, extra=' font-weight="bold"'),
             _text(left, top - 26, "destination →"),
             _text(2, top - 6, "source ↓")]
    for index, label in enumerate(labels):
        parts.append(_text(left + cell_size * index + cell_size / 2, top - 6, str(label), anchor="middle"))
        parts.append(_text(left - 6, top + cell_size * index + cell_size / 2 + 4, str(label), anchor="end"))
    for row_index in range(count):
        for column_index in range(count):
            x, y = left + cell_size * column_index, top + cell_size * row_index
            value = values[row_index][column_index] if row_index < len(values) and column_index < len(values[row_index]) else None
            note = notes[row_index][column_index] if row_index < len(notes) and column_index < len(notes[row_index]) else ""
            if row_index == column_index:
                fill, text = "#ffffff", "—"
            elif _finite(value):
                fill, text = _heat_colour(value / highest if highest else 0.0), format_number(round(value, 1))
            else:
                fill, text = "#cccccc", "n/a"
            tooltip = "%s → %s: %s%s" % (labels[row_index], labels[column_index],
                                         _with_unit(value, unit) if _finite(value) else text, " (%s)" % note if note else "")
            parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff"><title>%s</title></rect>'
                         % (x, y, cell_size, cell_size, fill, escape(tooltip)))
            parts.append(_text(x + cell_size / 2, y + cell_size / 2, text, anchor="middle"))
            if note and row_index != column_index:
                parts.append(_text(x + cell_size / 2, y + cell_size / 2 + 14, note, anchor="middle"))
    parts.append(_text(left, height - 8, "%s; colour: value / the largest (%s)" % (unit, _with_unit(highest, unit) if finite else "none")))
    parts.append("</svg>")
    return "".join(parts)


def roofline_chart(title: str, roofs: Sequence[Tuple[str, float, float]], points: Sequence[Tuple[str, str, float, float]],
                   width: int = 620, height: int = 360) -> str:
    """Log-log roofline. roofs: (label, peak TFLOP/s, bandwidth GB/s); points: (series, label, FLOP/byte, TFLOP/s)."""
    left, right, top, bottom = 64, 150, 26, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    shown = [(series, label, x, y) for series, label, x, y in points if _finite(x) and _finite(y) and x > 0 and y > 0]
    roofs = [(label, peak, bandwidth) for label, peak, bandwidth in roofs if _finite(peak) and _finite(bandwidth) and peak > 0 and bandwidth > 0]
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" role="img" width="%d" height="%d" viewBox="0 0 %d %d">' % (width, height, width, height),
             "<title>%s</title>" % escape(title), _text(0, 14, title, extra=' font-weight="bold"')]
    if not shown:
        parts.append(_text(left, top + 20, "no data to plot"))
        parts.append("</svg>")
        return "".join(parts)
    ridges = [peak * 1e12 / (bandwidth * 1e9) for unused_label, peak, bandwidth in roofs]
    xs = [x for unused_series, unused_label, x, unused_y in shown] + ridges
    ys = [y for unused_series, unused_label, unused_x, y in shown] + [peak for unused_label, peak, unused_bandwidth in roofs]
    x_low, x_high = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)) + 0.01)
    y_low, y_high = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)) + 0.01)

    def px(x: float) -> float:
        return left + plot_w * (math.log10(x) - x_low) / ((x_high - x_low) or 1)

    def py(y: float) -> float:
        return top + plot_h - plot_h * (math.log10(y) - y_low) / ((y_high - y_low) or 1)

    parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (left, top, plot_w, plot_h))
    for exponent in range(x_low, x_high + 1):
        parts.append(_text(px(10.0 ** exponent), top + plot_h + 14, format_number(10.0 ** exponent), anchor="middle"))
    for exponent in range(y_low, y_high + 1):
        parts.append(_text(left - 4, py(10.0 ** exponent) + 4, format_number(10.0 ** exponent), anchor="end"))
    parts.append(_text(left + plot_w / 2, height - 4, "arithmetic intensity, FLOP/byte", anchor="middle"))
    parts.append(_text(4, top - 4, "TFLOP/s"))
    series_names = sorted({series for series, unused_label, unused_x, unused_y in shown})
    colours = {name: SERIES_COLOURS[index % len(SERIES_COLOURS)] for index, name in enumerate(series_names)}
    for label, peak, bandwidth in roofs:
        ridge = peak * 1e12 / (bandwidth * 1e9)
        start_x = 10.0 ** x_low
        start_y = max(start_x * bandwidth * 1e9 / 1e12, 10.0 ** y_low)
        start_x = start_y * 1e12 / (bandwidth * 1e9)
        parts.append('<polyline fill="none" stroke="#555" stroke-dasharray="4 3" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f"><title>%s</title></polyline>' % (
            px(start_x), py(start_y), px(ridge), py(peak), px(10.0 ** x_high), py(peak),
            escape("%s roof: %s TFLOP/s, %s GB/s, ridge %s FLOP/byte" % (label, format_number(peak), format_number(bandwidth), format_number(ridge)))))
        parts.append(_text(px(10.0 ** x_high) + 4, py(peak) + 4, "%s %s" % (label, format_number(peak))))
    for series, label, x, y in shown:
        parts.append('<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s</title></circle>' % (
            px(x), py(y), colours[series], escape("%s %s: %s FLOP/byte, %s TFLOP/s" % (series, label, format_number(x), format_number(y)))))
    for index, name in enumerate(series_names):
        y = top + 40 + index * 14
        parts.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>' % (left + plot_w + 10, y - 4, colours[name]))
        parts.append(_text(left + plot_w + 18, y, name))
    parts.append("</svg>")
    return "".join(parts)
