# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet history page, <results>/history.html (docs/history.md, "Pictures"): the newest runs of the run index, each
with its hosts by verdict (counted, and drawn as one stacked bar), the hosts drained and resumed, and the hosts whose
trend checks fired, each linked to its dossier. Self-contained like every page of the report: no script, nothing
fetched, every text escaped."""
from __future__ import annotations

import os
import sqlite3
from html import escape
from typing import Any, Dict, List, Sequence, Tuple

from ..judge.model import VERDICT_WORDS, VERDICTS
from ..history.fleet_nights import NOT_PASSING_SHOWN, FleetNights, HostMention, RunNight, fleet_nights
from ..store.atomic import write_text_atomically
from ..store.paths import HISTORY_PAGE_FILE, INDEX_HTML_FILE
from .markup import HTML, BuiltHtml, href
from .verdicts import VERDICT_FLAG, verdict_rank

# The stacked bar's colour of each verdict (the pills' colours, deeper, and each verdict its own).
VERDICT_COLOURS = {"fail": "#c62828", "error": "#8e24aa", "unreachable": "#6d4c41", "not_validated": "#ef6c00",
                   "not judged": "#455a64", "warn": "#f2b705", "pass": "#43a047"}
OTHER_COLOUR = "#9e9e9e"
BAR_WIDTH, BAR_HEIGHT = 240, 14
# A cell names this many hosts; the others are folded under "N more" (every one still listed and linked).
MENTIONS_SHOWN = 10


def verdict_bar(counts: Sequence[Tuple[str, int]]) -> BuiltHtml:
    """One run's hosts by verdict as a stacked bar, worst first from the left; its <title> says the counts."""
    total = sum(count for unused_verdict, count in counts)
    said = ", ".join("%d %s" % (count, VERDICT_WORDS.get(verdict, verdict)) for verdict, count in counts if count) or "no hosts"
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" class="verdict-bar" width="%d" height="%d" viewBox="0 0 %d %d" role="img">'
             % (BAR_WIDTH, BAR_HEIGHT, BAR_WIDTH, BAR_HEIGHT), "<title>%s</title>" % escape(said)]
    left = 0.0
    for verdict, count in counts:
        if not count:
            continue
        width = BAR_WIDTH * count / total
        parts.append('<rect x="%.2f" y="0" width="%.2f" height="%d" fill="%s"><title>%s</title></rect>'
                     % (left, width, BAR_HEIGHT, VERDICT_COLOURS.get(verdict, OTHER_COLOUR),
                        escape("%d %s" % (count, VERDICT_WORDS.get(verdict, verdict)))))
        left += width
    if not total:
        parts.append('<rect x="0" y="0" width="%d" height="%d" fill="none" stroke="%s"/>' % (BAR_WIDTH, BAR_HEIGHT, OTHER_COLOUR))
    parts.append("</svg>")
    return BuiltHtml("".join(parts))


def _mentions(mentions: List[HostMention]) -> Dict[str, List[Dict[str, Any]]]:
    """The hosts of one cell: the first MENTIONS_SHOWN shown, the rest folded (a night that drained hundreds)."""
    views = [{"host": mention.host, "href": href(*mention.dossier.split("/")) if mention.dossier else "", "notes": list(mention.notes)}
             for mention in mentions]
    return {"shown": views[:MENTIONS_SHOWN], "folded": views[MENTIONS_SHOWN:]}


def _shown_time(started: str) -> str:
    """2026-12-01T01:00:00Z as 2026-12-01 01:00 UTC; anything else as it is."""
    if len(started) == 20 and started[10] == "T" and started.endswith("Z"):
        return "%s %s UTC" % (started[:10], started[11:16])
    return started


def _night_row(night: RunNight) -> Dict[str, Any]:
    counts = sorted(((verdict, night.verdicts.get(verdict, 0)) for verdict in set(VERDICTS) | set(night.verdicts)),
                    key=lambda item: (-verdict_rank(item[0]), item[0]))
    return {"run_id": night.run_id, "started": _shown_time(night.started), "index_href": href(night.run_id, INDEX_HTML_FILE),
            "host_count": night.host_count, "bar": verdict_bar(counts),
            "counts": [(verdict, count, VERDICT_FLAG.get(verdict, "bad")) for verdict, count in counts if count],
            "drained": _mentions(night.drained), "resumed": _mentions(night.resumed), "trends": _mentions(night.trends),
            "not_passing": _mentions([HostMention(mention.host, mention.dossier, tuple(VERDICT_WORDS.get(note, note) for note in mention.notes))
                                      for mention in night.not_passing]),
            "not_passing_more": sum(count for verdict, count in night.verdicts.items() if verdict != "pass") - len(night.not_passing)}


def history_context(history: FleetNights) -> Dict[str, Any]:
    """What history.html.j2 shows."""
    return {"rows": [_night_row(night) for night in history.nights], "indexed": history.indexed, "page_runs": history.limit,
            "not_passing_shown": NOT_PASSING_SHOWN,
            "legend": [(VERDICT_WORDS.get(verdict, verdict), colour) for verdict, colour in VERDICT_COLOURS.items()]}


def render_history_page(history: FleetNights) -> str:
    return HTML.get_template("history.html.j2").render(**history_context(history))


def write_history_page(results_dir: str) -> List[str]:
    """Write <results>/history.html from the run index (atomically, never through a link); the run warnings to show
    when it could not be (the run's report is written all the same)."""
    path = os.path.join(os.path.abspath(results_dir), HISTORY_PAGE_FILE)
    try:
        write_text_atomically(path, render_history_page(fleet_nights(results_dir)), root=os.path.abspath(results_dir))
    except (OSError, ValueError, sqlite3.Error) as exc:
        return ["the fleet history page %s was not written: %s: %s (the run's report is written; the next report writes "
                "the page again)" % (path, type(exc).__name__, exc)]
    return []
