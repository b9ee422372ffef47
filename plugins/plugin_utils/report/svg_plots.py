"""Small inline SVG charts for the HTML report: no script, no fonts or styles fetched, every text escaped.

Each chart is a Plot: the SVG markup (a str, so a template embeds it as it is) that also carries its text
alternative, .heading and .description (sentences saying what it shows, generated from the plotted numbers), and
.data_note (where the same numbers stand as a table, given by the caller). The SVG holds both as <title> and <desc>,
named by aria-labelledby / aria-describedby, so a screen reader announces the chart and what it shows.

Layout rules, the same in every chart:
- axes: linear axes tick at 1-2-5 steps (Heckbert's "nice numbers"), a value axis from zero up to the first tick at
  or above the largest value; log axes tick at the powers of ten (and at 2 and 5 times them where the data spans
  fewer than three decades); tick labels carry as many decimals as the step needs, and no more;
- axis titles name the quantity and its unit, "bandwidth (GB/s)"; the value axis's title is written vertically beside
  its tick labels, never above the top one;
- the legend sits below the plot area, outside it, in rows that wrap; dashed reference lines (a plateau, a knee) are
  legend entries with their value rather than labels drawn over the data;
- the roofline's roof labels stand right of the plot area, one per distinct roof, moved apart so none overlaps
  another; the title wraps to the chart's width.
Text widths are estimated from the characters (the report ships no font), conservatively, for an 11 px sans-serif.
"""
from __future__ import annotations

import hashlib
import math
from html import escape
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .values import format_number
from ..result_fields import number_or_none

FONT_SIZE = 11
TITLE_SIZE = 12
LINE = 15  # px between text lines
SERIES_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
AXIS, GRID, MUTED = "#666", "#e6e6e6", "#555"
MAX_MARKED_POINTS = 40  # a series with at most this many points shows each one as a dot
MAX_DESCRIBED_SERIES = 8


class Plot(str):
    """An SVG chart; .heading, .description and .data_note are its text alternative and where its numbers are
    (.heading, not .title: str.title is a method a template would print)."""

    heading: str
    description: str
    data_note: str

    def __new__(cls, svg: str, heading: str, description: str, data_note: str = "") -> "Plot":
        plot = super().__new__(cls, svg)
        plot.heading, plot.description, plot.data_note = heading, description, data_note
        return plot


# ---------------------------------------------------------------------------------------------------------------
# numbers on axes

def nice_number(value: float, round_to_nearest: bool) -> float:
    """Heckbert's nice number: 1, 2, 5 or 10 times a power of ten, nearest to value (round) or at least value."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exponent = math.floor(math.log10(value))
    fraction = value / 10.0 ** exponent
    if round_to_nearest:
        nice = 1 if fraction < 1.5 else 2 if fraction < 3 else 5 if fraction < 7 else 10
    else:
        nice = 1 if fraction <= 1 else 2 if fraction <= 2 else 5 if fraction <= 5 else 10
    return nice * 10.0 ** exponent


def _decimals(step: float) -> int:
    """Decimal places a step needs: 0.25 -> 2, 1 -> 0, 20 -> -1 (negative: whole tens, hundreds)."""
    return -math.floor(math.log10(step) + 1e-9)


def linear_ticks(low: float, high: float, count: int = 5, loose: bool = True) -> Tuple[float, float, List[float], int]:
    """(axis low, axis high, ticks, decimals): ticks at a 1-2-5 step (Heckbert's nice numbers), about count of them.

    loose: the axis runs from the tick at or below low to the tick at or above high (a value axis);
    otherwise it runs from low to high and only the ticks inside are kept (a time axis).
    decimals: the places a label needs at that step, negative for a step of tens or more (tick_label's argument).
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        low, high = 0.0, 1.0
    if high < low:
        low, high = high, low
    if high == low:  # one value: an axis from zero to it
        low, high = (0.0, high) if high > 0 else (low, 0.0) if low < 0 else (0.0, 1.0)
    step = nice_number((high - low) / max(1, count - 1), True)
    decimals = _decimals(step)
    if loose:
        first, last = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
        axis_low, axis_high = first * step, last * step
    else:
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
        axis_low, axis_high = low, high
    ticks = [round(index * step, max(0, decimals)) for index in range(first, last + 1)]
    return axis_low, axis_high, ticks, decimals


def tick_label(value: float, decimals: int = 0) -> str:
    """A linear tick with the places its step needs (linear_ticks' decimals); from 100,000 on in k/M/G (200k, 1.5M)."""
    for factor, exponent, suffix in ((1e12, 12, "T"), (1e9, 9, "G"), (1e6, 6, "M"), (1e3, 3, "k")):
        if abs(value) >= 1e5 and abs(value) >= factor:
            return "%.*f%s" % (max(0, decimals + exponent), value / factor, suffix)
    text = "%.*f" % (max(0, decimals), value)
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def compact_number(value: float) -> str:
    """1, 10, 100, 1k, 10k, 1M, 2M, 1G: short labels for the ticks of a log axis (at most 4 significant digits)."""
    if value == 0:
        return "0"
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return _short(value / factor) + suffix
    return _short(value)


def _short(value: float) -> str:
    text = "%.4g" % value
    if "e" in text:
        mantissa, exponent = text.split("e")
        return "%se%d" % (mantissa, int(exponent))
    return text


def log_ticks(low: float, high: float) -> Tuple[float, float, List[float], List[float]]:
    """(axis low, axis high, labelled ticks, minor ticks) of a log axis over positive low..high.

    The axis spans the data with a little room; it is labelled at the powers of ten inside, and also at 2 and 5
    times them when fewer than three powers of ten fall inside; the other whole multiples are minor ticks.
    """
    low_log, high_log = math.log10(low), math.log10(high)
    if high_log - low_log < 1e-9:
        low_log, high_log = low_log - 0.5, high_log + 0.5
    room = (high_log - low_log) * 0.03
    low_log, high_log = low_log - room, high_log + room
    axis_low, axis_high = 10.0 ** low_log, 10.0 ** high_log

    def inside(value: float) -> bool:
        return low_log - 1e-9 <= math.log10(value) <= high_log + 1e-9

    multiples = [(multiple, multiple * 10.0 ** exponent)
                 for exponent in range(math.floor(low_log), math.ceil(high_log) + 1) for multiple in range(1, 10)]
    multiples = [(multiple, value) for multiple, value in multiples if inside(value)]
    labelled = [value for multiple, value in multiples if multiple == 1]
    if len(labelled) < 3:
        labelled = [value for multiple, value in multiples if multiple in (1, 2, 5)]
    if len(labelled) < 2:
        labelled = [value for unused_multiple, value in multiples]
    minor = [value for unused_multiple, value in multiples if value not in labelled]
    return axis_low, axis_high, labelled, minor


# ---------------------------------------------------------------------------------------------------------------
# text

_NARROW = frozenset("il.,:;'|!()[]{}/ -tfjrI1")  # measured: DejaVu Sans 11 px, 0.39 em
_WIDE = frozenset("mwMW@%→—")
_EM: Dict[str, float] = {}


def _em(character: str) -> float:
    if character in _NARROW:
        return 0.39
    if character in _WIDE:
        return 0.95
    return 0.7 if character.isupper() or character.isdigit() else 0.6


def text_width(text: str, size: float = FONT_SIZE, bold: bool = False) -> float:
    """An upper estimate of the rendered width of text in a sans-serif at size px (DejaVu Sans is the widest common)."""
    em = 0.0
    for character in text:
        width = _EM.get(character)
        if width is None:
            width = _EM[character] = _em(character)
        em += width
    return em * size * (1.15 if bold else 1.0)


def wrap(text: str, width: float, size: float = FONT_SIZE, bold: bool = False) -> List[str]:
    """text in lines no wider than width (a word wider than that alone on its line)."""
    lines: List[str] = []
    used, space = 0.0, text_width(" ", size, bold)
    for word in text.split():
        word_width = text_width(word, size, bold)
        if lines and used + space + word_width <= width:
            lines[-1] += " " + word
            used += space + word_width
        else:
            lines.append(word)
            used = word_width
    return lines or [""]


def _text(x: float, y: float, content: str, anchor: str = "start", extra: str = "") -> str:
    return '<text x="%.1f" y="%.1f"%s%s>%s</text>' % (
        x, y, "" if anchor == "start" else ' text-anchor="%s"' % anchor, extra, escape(content))


def _with_unit(value: float, unit: str) -> str:
    return "%s %s" % (format_number(value), unit) if unit else format_number(value)


PREFIXED_UNITS = frozenset({"B", "FLOP", "Hz"})  # units an SI prefix joins: 1.074 GB, not 1.074G B


def _quantity(value: float, unit: str, compact: bool) -> str:
    """A value for a sentence or a legend: on an axis of sizes (compact) 13 MB, 268.4M elements; else as the tables."""
    if not compact or abs(value) < 1e4:
        return _with_unit(value, unit)
    text = compact_number(value)
    if unit in PREFIXED_UNITS:
        return "%s %s%s" % (text[:-1], text[-1], unit)
    return "%s %s" % (text, unit) if unit else text


def _axis_title(name: str, unit: str) -> str:
    if name and unit:
        return "%s (%s)" % (name, unit)
    return name or unit


def _finite(value: object) -> bool:
    """A number to plot: an int or a float (not a bool), neither NaN nor infinite."""
    kind = type(value)
    if kind is float:
        return math.isfinite(value)  # type: ignore[arg-type]
    return kind is int or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


def _sentence_list(items: Sequence[str]) -> str:
    items = [item for item in items if item]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# ---------------------------------------------------------------------------------------------------------------
# the frame every chart shares

class _Canvas:
    def __init__(self, title: str, width: int):
        self.title, self.width = title, width
        self.title_lines = wrap(title, width - 4, TITLE_SIZE, bold=True)
        self.parts: List[str] = []

    @property
    def title_height(self) -> float:
        return LINE * len(self.title_lines) + 4

    def finish(self, height: float, description: str, data_note: str = "") -> Plot:
        height = int(math.ceil(height))
        ident = "plot-" + hashlib.sha1(("%s\n%s" % (self.title, description)).encode("utf-8")).hexdigest()[:10]
        head = ('<svg xmlns="http://www.w3.org/2000/svg" role="img" width="%d" height="%d" viewBox="0 0 %d %d" '
                'style="max-width:100%%;height:auto" font-family="sans-serif" font-size="%d" '
                'aria-labelledby="%s-t" aria-describedby="%s-d"><title id="%s-t">%s</title><desc id="%s-d">%s</desc>'
                % (self.width, height, self.width, height, FONT_SIZE, ident, ident, ident, escape(self.title),
                   ident, escape(description)))
        title = "".join(_text(0, 13 + LINE * index, line, extra=' font-size="%d" font-weight="bold"' % TITLE_SIZE)
                        for index, line in enumerate(self.title_lines))
        return Plot(head + title + "".join(self.parts) + "</svg>", self.title, description, data_note)


def _legend(parts: List[str], items: Sequence[Tuple[str, str]], left: float, top: float, width: float) -> float:
    """Legend entries (swatch svg drawn in a 16x10 box at 0,0; label), flowing in rows from left, top; returns its height."""
    if not items:
        return 0.0
    x, y = left, top
    for swatch, label in items:
        item_width = 22 + text_width(label) + 14
        if x > left and x + item_width > left + width:
            x, y = left, y + LINE
        parts.append('<g transform="translate(%.1f,%.1f)">%s</g>' % (x, y - 9, swatch))
        parts.append(_text(x + 20, y, label))
        x += item_width
    return y - top + LINE


def _line_swatch(colour: str, dashed: bool = False) -> str:
    return '<line x1="0" y1="5" x2="16" y2="5" stroke="%s" stroke-width="2"%s/>' % (
        colour, ' stroke-dasharray="4 3"' if dashed else "")


SHAPES = ("circle", "square", "triangle", "diamond", "down")


def _shape(shape: str, x: float, y: float, colour: str, tooltip: str = "") -> str:
    """A hollow point marker (overlapping points of two series both stay visible), centred on x, y."""
    title = "<title>%s</title>" % escape(tooltip) if tooltip else ""
    style = 'fill="none" stroke="%s" stroke-width="1.5"' % colour
    if shape == "circle":
        return '<circle cx="%.1f" cy="%.1f" r="3.5" %s>%s</circle>' % (x, y, style, title)
    if shape == "square":
        return '<rect x="%.1f" y="%.1f" width="6.4" height="6.4" %s>%s</rect>' % (x - 3.2, y - 3.2, style, title)
    offsets = {"triangle": ((0, -4.3), (3.9, 2.7), (-3.9, 2.7)), "down": ((0, 4.3), (3.9, -2.7), (-3.9, -2.7)),
               "diamond": ((0, -4.3), (4.3, 0), (0, 4.3), (-4.3, 0))}[shape]
    return '<polygon points="%s" %s>%s</polygon>' % (" ".join("%.1f,%.1f" % (x + dx, y + dy) for dx, dy in offsets), style, title)


def _tick_swatch(colour: str) -> str:
    return '<line x1="8" y1="-1" x2="8" y2="11" stroke="%s" stroke-width="2"/>' % colour


def _no_data(title: str, width: int, reason: str = "no data to plot") -> Plot:
    canvas = _Canvas(title, width)
    canvas.parts.append(_text(60, canvas.title_height + 20, reason, extra=' fill="%s"' % MUTED))
    return canvas.finish(canvas.title_height + 34, "%s: %s." % (title, reason))


class _Axis:
    """One axis: its range in data units, ticks and labels, and the mapping to a pixel span."""

    def __init__(self, values: Iterable[float], log: bool, loose: bool, include_zero: bool = False):
        values = [value for value in values if _finite(value) and (value > 0 or not log)]
        self.log = log
        if log:
            self.low, self.high, self.ticks, self.minor = log_ticks(min(values), max(values))
            # sizes up to 1G read best as 1k, 1M, 1G; an axis that stays below 10,000 keeps its plain numbers
            self.compact = max(self.ticks) >= 1e4
            self.labels = [compact_number(value) if self.compact else _short(value) for value in self.ticks]
        else:
            low, high = min(values), max(values)
            if include_zero:
                low, high = min(low, 0.0), max(high, 0.0)
            self.low, self.high, self.ticks, decimals = linear_ticks(low, high, loose=loose)
            self.minor = []
            self.compact = False
            self.labels = [tick_label(value, decimals) for value in self.ticks]
        self.start, self.end = 0.0, 1.0

    def place(self, start: float, end: float) -> None:
        self.start, self.end = start, end
        low, high = (math.log10(self.low), math.log10(self.high)) if self.log else (self.low, self.high)
        self._origin, self._scale = low, (end - start) / ((high - low) or 1.0)

    def __call__(self, value: float) -> float:
        return self.start + ((math.log10(value) if self.log else value) - self._origin) * self._scale

    def label_width(self) -> float:
        return max([text_width(label) for label in self.labels] + [0.0])


def _frame(parts: List[str], x: _Axis, y: _Axis, left: float, top: float, plot_w: float, plot_h: float,
           x_title: str, y_title: str) -> None:
    """Grid, ticks, tick labels and both axis titles around the plot area (left, top, plot_w, plot_h)."""
    bottom = top + plot_h
    for value in y.ticks:
        pixel = y(value)
        parts.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>' % (left, pixel, left + plot_w, pixel, GRID))
    for value in x.ticks:
        pixel = x(value)
        parts.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>' % (pixel, top, pixel, bottom, GRID))
    parts.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="%s"/>' % (left, top, plot_w, plot_h, AXIS))
    ticks = []
    for value in y.ticks:
        ticks.append("M%.1f %.1fh-5" % (left, y(value)))
    for value in y.minor:
        ticks.append("M%.1f %.1fh-3" % (left, y(value)))
    for value in x.ticks:
        ticks.append("M%.1f %.1fv5" % (x(value), bottom))
    for value in x.minor:
        ticks.append("M%.1f %.1fv3" % (x(value), bottom))
    parts.append('<path d="%s" stroke="%s" fill="none"/>' % ("".join(ticks), AXIS))
    for value, label in zip(y.ticks, y.labels):
        parts.append(_text(left - 7, y(value) + 4, label, anchor="end"))
    for value, label in zip(x.ticks, x.labels):
        parts.append(_text(x(value), bottom + 17, label, anchor="middle"))
    parts.append(_text(left + plot_w / 2, bottom + 34, x_title, anchor="middle"))
    middle = top + plot_h / 2
    parts.append(_text(13, middle, y_title, anchor="middle", extra=' transform="rotate(-90 13 %.1f)"' % middle))


# ---------------------------------------------------------------------------------------------------------------
# charts

def bar_chart(title: str, labels: Sequence[str], values: Sequence[Optional[float]], unit: str,
              references: Sequence[Tuple[str, Optional[float]]] = (),
              markers: Sequence[Sequence[Tuple[str, Optional[float]]]] = (),
              width: int = 560, value_name: str = "", data_note: str = "") -> Plot:
    """Horizontal bars, one per label, on an axis from zero; a value that is not a finite number reads "n/a".

    references: (name, value) ticks drawn on every bar (e.g. a datasheet peak);
    markers[i]: (name, value) ticks drawn on bar i alone (e.g. that GPU's power limit). Each tick name is a legend
    entry below the bars. value_name names the quantity for the axis title ("power draw" -> "power draw (W)").
    """
    ticks = [list(references) + list(markers[index] if index < len(markers) else ())
             for index in range(len(labels))]
    tick_names = list(dict.fromkeys(name for row in ticks for name, value in row if _finite(value)))
    tick_colour = {name: ("#d62728", "#111111", "#ff7f0e", "#9467bd")[index % 4] for index, name in enumerate(tick_names)}
    bar_values = [value for value in values if _finite(value)]
    if not bar_values and not tick_names:
        return _no_data(title, width)
    value_texts = [_with_unit(value, unit) if _finite(value) else "n/a" for value in
                   (list(values) + [None] * len(labels))[:len(labels)]]
    canvas = _Canvas(title, width)
    parts = canvas.parts
    label_width = max([text_width(str(label)) for label in labels] + [30.0]) + 12
    value_width = max([text_width(text) for text in value_texts] + [30.0]) + 12
    left, top = label_width, canvas.title_height + 6
    plot_w = width - left - value_width
    bar_height, gap = 16, 6
    plot_h = len(labels) * (bar_height + gap) + gap
    marker_values = [abs(value) for row in ticks for unused_name, value in row if _finite(value)]
    axis = _Axis([0.0] + [abs(value) for value in bar_values] + marker_values, log=False, loose=True, include_zero=True)
    axis.place(left, left + plot_w)
    for value in axis.ticks:
        parts.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>' % (axis(value), top, axis(value), top + plot_h, GRID))
    parts.append('<path d="M%.1f %.1fV%.1fH%.1f" stroke="%s" fill="none"/>' % (left, top, top + plot_h, left + plot_w, AXIS))
    parts.append('<path d="%s" stroke="%s"/>' % ("".join("M%.1f %.1fv5" % (axis(value), top + plot_h) for value in axis.ticks), AXIS))
    for value, label in zip(axis.ticks, axis.labels):
        parts.append(_text(axis(value), top + plot_h + 17, label, anchor="middle"))
    parts.append(_text(left + plot_w / 2, top + plot_h + 34, _axis_title(value_name, unit), anchor="middle"))
    for index, label in enumerate(labels):
        y = top + gap + index * (bar_height + gap)
        parts.append(_text(left - 8, y + bar_height - 4, str(label), anchor="end"))
        value = values[index] if index < len(values) else None
        if _finite(value):
            parts.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#4c78a8"><title>%s</title></rect>'
                         % (left, y, axis(abs(value)) - left, bar_height, escape("%s: %s" % (label, value_texts[index]))))
            parts.append(_text(left + plot_w + 8, y + bar_height - 4, value_texts[index]))
        else:
            parts.append(_text(left + plot_w + 8, y + bar_height - 4, "n/a", extra=' fill="#b00"'))
        for name, marker in ticks[index]:
            if not _finite(marker):
                continue
            x = axis(abs(marker))
            parts.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"><title>%s</title></line>'
                         % (x, y - 2, x, y + bar_height + 2, tick_colour[name], escape("%s: %s" % (name, _with_unit(marker, unit)))))
    legend_height = _legend(parts, [(_tick_swatch(tick_colour[name]), name) for name in tick_names],
                            left, top + plot_h + 54, width - left)
    description = _bar_description(labels, value_texts, ticks, references, unit, value_name)
    return canvas.finish(top + plot_h + 42 + legend_height + 4, description, data_note)


def _bar_description(labels: Sequence[str], value_texts: List[str], ticks: List[List[Tuple[str, Optional[float]]]],
                     references: Sequence[Tuple[str, Optional[float]]], unit: str, value_name: str) -> str:
    """The bar chart's sentence: each bar's value with its own ticks, then the ticks drawn on every bar."""
    described = []
    for index, label in enumerate(labels):
        words = "%s %s" % (label, value_texts[index])
        extras = ["%s %s" % (name, _with_unit(marker, unit)) for name, marker in ticks[index]
                  if _finite(marker) and not any(name == ref_name for ref_name, unused in references)]
        described.append(words + (" (%s)" % ", ".join(extras) if extras else ""))
    reference_words = ["%s %s" % (name, _with_unit(value, unit)) for name, value in references if _finite(value)]
    return "Bar chart of %s per bar: %s.%s" % (
        _axis_title(value_name, unit) or "the value", "; ".join(described),
        " Drawn on every bar: %s." % _sentence_list(reference_words) if reference_words else "")


def _point_list(points: Sequence[Tuple[float, float]], x_unit: str, y_unit: str, compact_x: bool = False) -> str:
    def at(x: float) -> str:
        return _quantity(x, x_unit, compact_x)

    ordered = sorted(points)
    first, last = ordered[0], ordered[-1]
    highest = max(ordered, key=lambda point: point[1])
    lowest = min(ordered, key=lambda point: point[1])
    words = "%d points, %s at %s to %s at %s" % (len(ordered), _with_unit(first[1], y_unit), at(first[0]),
                                                 _with_unit(last[1], y_unit), at(last[0]))
    extremes = []
    if highest not in (first, last):
        extremes.append("highest %s at %s" % (_with_unit(highest[1], y_unit), at(highest[0])))
    if lowest not in (first, last):
        extremes.append("lowest %s at %s" % (_with_unit(lowest[1], y_unit), at(lowest[0])))
    return words + ("; " + ", ".join(extremes) if extremes else "")


def line_points(records: Iterable[Mapping[str, Any]], x_key: str, y_key: str) -> List[Tuple[float, float]]:
    """A line chart's points of a sweep's records: (x, y) of each whose x_key is a number other than 0 and y_key a number."""
    points = []
    for record in records:
        x, y = number_or_none(record.get(x_key)), number_or_none(record.get(y_key))
        if x and y is not None:
            points.append((x, y))
    return points


def line_chart(title: str, series: Sequence[Tuple[str, Sequence[Tuple[float, float]]]], x_unit: str, y_unit: str,
               log_x: bool = False, marker_x: Optional[float] = None, marker_label: str = "",
               width: int = 600, height: int = 240, markers: Sequence[Tuple] = (),
               x_name: str = "", y_name: str = "", data_note: str = "") -> Plot:
    """Lines of (x, y) points, one per named series, on a value axis from zero; log_x for sweeps over sizes.

    x_name/y_name with x_unit/y_unit make the axis titles ("buffer size", "MiB" -> "buffer size (MiB)").
    marker_x draws one dashed vertical line (marker_label names it in the legend); markers more of them, each
    (x, label) or (x, label, series name): drawn in that series' colour (else the colour of the series of the
    same index). height is the plot area's; the chart grows by its title, axes and legend.
    """
    colours = {name: SERIES_COLOURS[index % len(SERIES_COLOURS)] for index, (name, unused) in enumerate(series)}
    points = [[(x, y) for x, y in pts if _finite(x) and _finite(y) and (x > 0 or not log_x)] for unused_name, pts in series]
    vertical = _vertical_lines(marker_x, marker_label, markers, colours, log_x)
    xs = [x for pts in points for x, unused_y in pts] + [x for x, unused_label, unused_colour in vertical]
    ys = [y for pts in points for unused_x, y in pts]
    if not xs or not ys:
        return _no_data(title, width)
    canvas = _Canvas(title, width)
    parts = canvas.parts
    x_axis = _Axis(xs, log=log_x, loose=False)
    y_axis = _Axis(ys, log=False, loose=True, include_zero=True)
    x_title, y_title = _axis_title(x_name, x_unit), _axis_title(y_name, y_unit)
    left = 22 + y_axis.label_width() + 10
    right = max(14.0, text_width(x_axis.labels[-1]) / 2 + 4) if x_axis.labels else 14.0
    top = canvas.title_height + 8
    plot_w, plot_h = width - left - right, height
    x_axis.place(left, left + plot_w)
    y_axis.place(top + plot_h, top)
    _frame(parts, x_axis, y_axis, left, top, plot_w, plot_h, x_title, y_title)
    legend = []
    for (name, unused_values), pts in zip(series, points):
        colour = colours[name]
        legend.append((_line_swatch(colour), str(name)))
        if not pts:
            continue
        ordered = sorted(pts)
        path = " ".join("%.1f,%.1f" % (x_axis(x), y_axis(y)) for x, y in ordered)
        parts.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>'
                     % (colour, path, escape(str(name))))
        if len(ordered) <= MAX_MARKED_POINTS:
            parts.append("".join('<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s</title></circle>' % (
                x_axis(x), y_axis(y), colour, escape("%s: %s at %s" % (name, _with_unit(y, y_unit), _quantity(x, x_unit, log_x))))
                for x, y in ordered))
    for x, label, colour in vertical:
        pixel = x_axis(x)
        words = "%s: %s" % (label, _quantity(x, x_unit, log_x))
        parts.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="5 3">'
                     "<title>%s</title></line>" % (pixel, top, pixel, top + plot_h, colour, escape(words)))
        legend.append((_line_swatch(colour, dashed=True), words))
    legend_height = _legend(parts, legend, left, top + plot_h + 56, plot_w + right)
    shown = [(str(name), pts) for (name, unused), pts in zip(series, points)]
    description = _line_description(shown, vertical, x_title, y_title, x_unit, y_unit, log_x)
    return canvas.finish(top + plot_h + 46 + legend_height + 4, description, data_note)


def _vertical_lines(marker_x: Optional[float], marker_label: str, markers: Sequence[Tuple], colours: Dict[str, str],
                    log_x: bool) -> List[Tuple[float, str, str]]:
    """(x, label, colour) of the line chart's dashed vertical lines: marker_x's, then each of markers."""
    vertical = []
    if _finite(marker_x) and (marker_x > 0 or not log_x):
        vertical.append((marker_x, marker_label or "marker", "#d62728"))
    for index, marker in enumerate(markers):
        x, label = marker[0], marker[1]
        owner = marker[2] if len(marker) > 2 else None
        colour = colours.get(owner) if owner in colours else SERIES_COLOURS[index % len(SERIES_COLOURS)]
        if _finite(x) and (x > 0 or not log_x):
            vertical.append((x, label, colour))
    return vertical


def _line_description(shown: List[Tuple[str, List[Tuple[float, float]]]], vertical: List[Tuple[float, str, str]], x_title: str,
                      y_title: str, x_unit: str, y_unit: str, log_x: bool) -> str:
    """The line chart's sentence: each series' points (the first MAX_DESCRIBED_SERIES), then the dashed lines."""
    described = ["%s: %s" % (name, _point_list(pts, x_unit, y_unit, log_x)) if pts else "%s: no point" % name
                 for name, pts in shown[:MAX_DESCRIBED_SERIES]]
    if len(shown) > MAX_DESCRIBED_SERIES:
        described.append("%d more series" % (len(shown) - MAX_DESCRIBED_SERIES))
    return "Line chart of %s against %s%s, %s: %s.%s" % (
        y_title or "the value", x_title or "x", " (log scale)" if log_x else "",
        "one series" if len(shown) == 1 else "%d series" % len(shown), "; ".join(described),
        " Dashed lines: %s." % "; ".join("%s at %s" % (label, _quantity(x, x_unit, log_x)) for x, label, unused in vertical)
        if vertical else "")


def _heat_colour(fraction: float) -> str:
    """Red (0) through yellow to green (1), so a slow pair stands out."""
    fraction = min(1.0, max(0.0, fraction))
    if fraction < 0.5:
        red, green = 220, int(60 + 320 * fraction)
    else:
        red, green = int(220 - 340 * (fraction - 0.5)), 190
    return "#%02x%02x%02x" % (max(0, red), min(255, green), 60)


def heatmap_chart(title: str, labels: Sequence[str], values: Sequence[Sequence[Optional[float]]], unit: str,
                  notes: Sequence[Sequence[str]] = (), cell_size: int = 64, data_note: str = "") -> Plot:
    """A square matrix (row = source, column = destination): each cell coloured by its value against the largest,
    printed with the value and its note (e.g. the link class); a missing value is grey with its note."""
    count = len(labels)
    label_width = max([text_width(str(label)) for label in labels] + [text_width("source ↓")]) + 12
    width = int(max(560, label_width + cell_size * count + 20))
    canvas = _Canvas(title, width)
    parts = canvas.parts
    left, top = label_width, canvas.title_height + 40
    finite = [value for row in values for value in row if _finite(value)]
    highest = max(finite) if finite else 0.0
    parts.append(_text(left, top - 24, "destination →"))
    parts.append(_text(2, top - 6, "source ↓"))
    cells = []
    for index, label in enumerate(labels):
        parts.append(_text(left + cell_size * index + cell_size / 2, top - 6, str(label), anchor="middle"))
        parts.append(_text(left - 8, top + cell_size * index + cell_size / 2 + 4, str(label), anchor="end"))
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
            if row_index != column_index:
                cells.append((value if _finite(value) else None, tooltip))
            parts.append('<rect x="%.1f" y="%d" width="%d" height="%d" fill="%s" stroke="#fff"><title>%s</title></rect>'
                         % (x, y, cell_size, cell_size, fill, escape(tooltip)))
            parts.append(_text(x + cell_size / 2, y + cell_size / 2, text, anchor="middle"))
            if note and row_index != column_index:
                parts.append(_text(x + cell_size / 2, y + cell_size / 2 + 14, note, anchor="middle"))
    key = "values in %s; colour: the value against the largest (%s), red low, green high" % (
        unit, _with_unit(highest, unit) if finite else "none")
    key_lines = wrap(key, width - 4)
    for index, line in enumerate(key_lines):
        parts.append(_text(2, top + cell_size * count + 20 + LINE * index, line))
    measured = sorted((cell for cell in cells if cell[0] is not None), key=lambda cell: cell[0])
    missing = [tooltip for value, tooltip in cells if value is None]
    words = ["%d of %d pairs measured" % (len(measured), len(cells))]
    if measured:
        words.append("highest %s" % measured[-1][1])
        if len(measured) > 1:
            words.append("lowest %s" % measured[0][1])
    if missing:
        words.append("not measured: %s" % "; ".join(missing[:8]) + (" and %d more" % (len(missing) - 8) if len(missing) > 8 else ""))
    description = "Matrix of %s from each source GPU (rows) to each destination GPU (columns): %s." % (unit, "; ".join(words))
    return canvas.finish(top + cell_size * count + 28 + LINE * len(key_lines), description, data_note)


def _roof_labels(wanted: List[Tuple[float, str, str]], low: float, high: float, spacing: float = LINE) -> List[Tuple[float, float, str, str]]:
    """(wanted y, placed y, text, colour) for labels wanted at y (pixels, top-down), at least spacing apart, inside low..high."""
    ordered = sorted(wanted)
    placed: List[float] = []
    for y, unused_text, unused_colour in ordered:
        placed.append(max(y, placed[-1] + spacing) if placed else max(y, low))
    overflow = (placed[-1] - high) if placed else 0.0
    if overflow > 0:  # pushed past the bottom: move the whole stack up, keeping the spacing
        placed = [y - overflow for y in placed]
        for index in range(len(placed) - 2, -1, -1):
            placed[index] = min(placed[index], placed[index + 1] - spacing)
    return [(y, new_y, text, colour) for (y, text, colour), new_y in zip(ordered, placed)]


def roofline_chart(title: str, roofs: Sequence[Tuple[str, float, float]], points: Sequence[Tuple[str, str, float, float]],
                   width: int = 640, height: int = 300, data_note: str = "") -> Plot:
    """Log-log roofline. roofs: (label, peak TFLOP/s, bandwidth GB/s); points: (series, label, FLOP/byte, TFLOP/s).

    Each roof is drawn in its series' colour (grey where several series share one roof) and labelled at its right
    end, outside the plot area; the series are in the legend below.
    """
    shown = [(series, label, x, y) for series, label, x, y in points if _finite(x) and _finite(y) and x > 0 and y > 0]
    roofs = [(label, peak, bandwidth) for label, peak, bandwidth in roofs if _finite(peak) and _finite(bandwidth) and peak > 0 and bandwidth > 0]
    if not shown:
        return _no_data(title, width)
    names = sorted({series for series, unused_label, unused_x, unused_y in shown})
    names += sorted({label for label, unused_peak, unused_bandwidth in roofs} - set(names))
    colours = {name: SERIES_COLOURS[index % len(SERIES_COLOURS)] for index, name in enumerate(names)}
    grouped: Dict[Tuple[float, float], List[str]] = {}
    for label, peak, bandwidth in roofs:
        grouped.setdefault((peak, bandwidth), []).append(label)
    roof_texts = {key: "%s: %s" % (", ".join(labels), format_number(key[0])) for key, labels in grouped.items()}
    ridges = [peak * 1e12 / (bandwidth * 1e9) for peak, bandwidth in grouped]
    xs = [x for unused_series, unused_label, x, unused_y in shown] + ridges
    ys = [y for unused_series, unused_label, unused_x, y in shown] + [peak for peak, unused in grouped]
    canvas = _Canvas(title, width)
    parts = canvas.parts
    x_axis, y_axis = _Axis(xs, log=True, loose=False), _Axis(ys, log=True, loose=False)
    left = 22 + y_axis.label_width() + 10
    right = max([text_width(text) for text in roof_texts.values()] + [text_width(x_axis.labels[-1]) / 2]) + 12
    top = canvas.title_height + 8
    plot_w, plot_h = width - left - right, height
    x_axis.place(left, left + plot_w)
    y_axis.place(top + plot_h, top)
    _frame(parts, x_axis, y_axis, left, top, plot_w, plot_h, "arithmetic intensity (FLOP/byte)", "rate (TFLOP/s)")
    _memory_roofs(parts, grouped, x_axis, y_axis)
    wanted = []
    for (peak, bandwidth), labels in sorted(grouped.items(), reverse=True):
        ridge = peak * 1e12 / (bandwidth * 1e9)
        colour = colours[labels[0]] if len(labels) == 1 else MUTED
        parts.append('<path d="M%.1f %.1fH%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="6 3" fill="none">'
                     "<title>%s</title></path>" % (
                         x_axis(ridge), y_axis(peak), left + plot_w, colour,
                         escape("%s roof: %s TFLOP/s, %s GB/s, ridge %s FLOP/byte" % (
                             ", ".join(labels), format_number(peak), format_number(bandwidth), format_number(ridge)))))
        wanted.append((y_axis(peak), roof_texts[(peak, bandwidth)], colour))
    for wanted_y, placed_y, text, colour in _roof_labels(wanted, top + 4, top + plot_h - 4):
        if abs(placed_y - wanted_y) > 1:
            parts.append('<path d="M%.1f %.1fL%.1f %.1f" stroke="%s" fill="none"/>' % (left + plot_w, wanted_y, left + plot_w + 6, placed_y, colour))
        parts.append(_text(left + plot_w + 8, placed_y + 4, text, extra=' fill="%s"' % colour))
    shapes = {name: SHAPES[index % len(SHAPES)] for index, name in enumerate(names)}
    for series, label, x, y in shown:
        parts.append(_shape(shapes[series], x_axis(x), y_axis(y), colours[series],
                            "%s %s: %s FLOP/byte, %s TFLOP/s" % (series, label, format_number(x), format_number(y))))
    legend = [(_shape(shapes[name], 8, 5, colours[name]), name) for name in names if any(series == name for series, _l, _x, _y in shown)]
    legend.append((_line_swatch(MUTED, dashed=True), "roofs: the measured bandwidth (slope), each dtype's peak (flat, named right)"))
    legend_height = _legend(parts, legend, left, top + plot_h + 56, width - left)
    return canvas.finish(top + plot_h + 46 + legend_height + 4, _roofline_description(names, shown, grouped), data_note)


def _memory_roofs(parts: List[str], grouped: Dict[Tuple[float, float], List[str]], x_axis: _Axis, y_axis: _Axis) -> None:
    """The roofline's sloped memory roofs, one per bandwidth."""
    for bandwidth in sorted({bandwidth for unused_peak, bandwidth in grouped}):
        # the memory roof, shared by every dtype measured against this bandwidth, up to the highest ridge
        peak = max(peak for peak, other in grouped if other == bandwidth)
        start_y = max(x_axis.low * bandwidth * 1e9 / 1e12, y_axis.low)
        start_x = start_y * 1e12 / (bandwidth * 1e9)
        parts.append('<path d="M%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="6 3" fill="none">'
                     "<title>%s</title></path>" % (x_axis(start_x), y_axis(start_y), x_axis(peak * 1e3 / bandwidth), y_axis(peak),
                                                   MUTED, escape("memory roof: %s GB/s" % format_number(bandwidth))))


def _roofline_description(names: List[str], shown: List[Tuple[str, str, float, float]],
                          grouped: Dict[Tuple[float, float], List[str]]) -> str:
    """The roofline's sentence: each series' shapes and its fastest, then the roofs."""
    described = []
    for name in names:
        mine = [(x, y, label) for series, label, x, y in shown if series == name]
        if not mine:
            continue
        best = max(mine, key=lambda point: point[1])
        described.append("%s: %d shapes from %s to %s FLOP/byte, the fastest %s at %s TFLOP/s (%s FLOP/byte)" % (
            name, len(mine), format_number(min(x for x, unused_y, unused in mine)), format_number(max(x for x, unused_y, unused in mine)),
            best[2], format_number(best[1]), format_number(best[0])))
    roof_words = ["%s %s TFLOP/s" % (", ".join(labels), format_number(peak)) for (peak, unused), labels in sorted(grouped.items(), reverse=True)]
    bandwidths = sorted({bandwidth for unused_peak, bandwidth in grouped})
    return "Log-log roofline of %d measured shapes, TFLOP/s against FLOP/byte: %s.%s" % (
        len(shown), "; ".join(described),
        " Roofs: %s, memory-bound below the ridge at %s GB/s." % (", ".join(roof_words), " or ".join(format_number(b) for b in bandwidths))
        if grouped else " No roof: no peak or bandwidth was known.")
