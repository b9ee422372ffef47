"""What the report's pages are written in: Markdown and HTML escaping, the table rows and cells built in Python, links,
and the two Jinja environments (the report's templates and each probe's section templates)."""
from __future__ import annotations

import functools
import os
import re
from typing import Any, Mapping, Sequence
from urllib.parse import quote

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from ..control_chars import escape_control
from ..probe_kit.registry import PACKAGES_DIR
from . import notes as report_notes

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")


class MarkdownText(str):
    """Markdown built by this module (links, code blocks): written out as is, not escaped."""


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|&#])")


def markdown_escape(value: Any) -> str:
    """Text that stays text in Markdown and keeps a table row on one line."""
    if value is None:
        return ""
    if isinstance(value, MarkdownText):
        return value
    return _markdown_escaped(str(value))


@functools.lru_cache(maxsize=16384)
def _markdown_escaped(text: str) -> str:
    # Cached: a report repeats the same field names, units and statuses for every GPU of every host.
    escaped = _MARKDOWN_SPECIAL.sub(r"\\\1", escape_control(text, keep="\t\n\r"))
    return escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def markdown_code_block(text: str) -> MarkdownText:
    """A fenced block whose fence is longer than any run of backticks inside it."""
    text = escape_control(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return MarkdownText("%s\n%s\n%s" % (fence, text, fence))


def markdown_link(text: str, target: str) -> MarkdownText:
    """target must already be URL-quoted (see href)."""
    return MarkdownText("[%s](%s)" % (markdown_escape(text), target))


def reason_markdown(reason: str) -> MarkdownText:
    """Why a field could not be read, for Markdown: a reference to the page's note ("[3]"), or the reason itself on a
    page without notes (report_notes)."""
    notes = report_notes.current()
    if notes is None:
        return MarkdownText(markdown_escape(reason))
    return MarkdownText("\\[%d\\]" % notes.number(reason))


def cell_text(cell: Any) -> MarkdownText:
    """A summary cell for Markdown, which has no tooltips or colours: the note goes inline, a bad value in bold."""
    text = markdown_escape(cell.text)
    if cell.note and cell.flag == "na" and report_notes.current() is not None:
        text += " " + reason_markdown(cell.note)
    elif cell.note and cell.flag in ("na", "warn", "bad"):
        text += " (%s)" % markdown_escape(cell.note)
    return MarkdownText("**%s**" % text if cell.flag == "bad" else text)


def status_markdown(status: str, flag: str) -> MarkdownText:
    """A check status or verdict for Markdown: a failure or warning in bold."""
    return MarkdownText("**%s**" % markdown_escape(status) if flag in ("bad", "warn") else markdown_escape(status))


def references_text(rows: Sequence[Mapping[str, Any]]) -> MarkdownText:
    """The "reference | check |" cells of a measurement row: what the judge held it against, and the verdict."""
    if not rows:
        return MarkdownText("— | — |")
    references = "; ".join("%s (%s)" % (markdown_escape(row["reference"]), markdown_escape(row["reference_source"]))
                           for row in rows)
    checks = "; ".join("%s %s (%s)" % (status_markdown(row["status"], row["flag"]), markdown_escape(row["id"]),
                                       markdown_escape(row["threshold"])) for row in rows)
    return MarkdownText("%s | %s |" % (references, checks))


class BuiltHtml(Markup):
    """HTML built by this module from parts each already finalized and escaped (_html): finalize passes it as it is.

    Scanning the tables of thousands of rows again for control characters was a tenth of a dossier's cost."""


def _html_finalize(value: Any) -> Any:
    """None as nothing; control characters as \\xNN (autoescape leaves them, and a browser hides or mangles them)."""
    if type(value) is BuiltHtml:  # pylint: disable=unidiomatic-typecheck  # a Markup from elsewhere is still scanned
        return value
    if value is None:
        return ""
    if isinstance(value, str):
        escaped = escape_control(value, keep="\t\n\r")
        return Markup(escaped) if isinstance(value, Markup) else escaped
    return value


def _html(value: Any) -> str:
    """A value as the HTML environment writes ``{{ value }}``: finalized, then escaped."""
    if isinstance(value, str):
        return _html_text(value)
    return str(escape(_html_finalize(value)))


@functools.lru_cache(maxsize=16384, typed=True)  # typed: a Markup and a str of the same text escape differently
def _html_text(value: str) -> str:
    return str(escape(_html_finalize(value)))


@functools.lru_cache(maxsize=1024)
def _note_link_html(number: int) -> str:
    return '<a class="ref" href="#%s">[%d]</a>' % (report_notes.note_id(number), number)


def reason_html(reason: str) -> BuiltHtml:
    """Why a field could not be read, for HTML: a link to the page's note ("[3]"), or the reason itself on a page
    without notes (report_notes)."""
    notes = report_notes.current()
    if notes is None:
        return BuiltHtml(_html(reason))
    return BuiltHtml(_note_link_html(notes.number(reason)))


def measurement_rows_html(probe: Mapping[str, Any], rows: Sequence[Any], judged: bool) -> BuiltHtml:
    """The rows of one "Every measurement" table, as dossier.html.j2 wrote them with a loop (built here: a dossier of
    8 GPUs has thousands, and a Jinja loop over them was most of a dossier's cost; docs/scale.md)."""
    references_macro = HTML.get_template("_macros.html.j2").module.references  # type: ignore[attr-defined]
    no_references = str(references_macro([], judged))
    lines = []
    html = _html_text  # a FlatRow's fields are plain str
    references = probe["references"]
    for row in rows:
        refs = references.get(row.path)
        cells = str(references_macro(refs, judged)) if refs else no_references
        if row.unavailable is not None:
            lines.append('<tr class="f-na"><td><code>%s</code></td><td colspan="2">unavailable %s</td>%s</tr>\n'
                         % (html(row.path), reason_html(row.unavailable), cells))
        else:
            flagged = ' class="f-%s"' % _html(refs[0]["flag"]) if refs and refs[0]["flag"] in ("bad", "warn") else ""
            lines.append("<tr%s><td><code>%s</code></td><td>%s</td><td>%s</td>%s</tr>\n"
                         % (flagged, html(row.path), html(row.value), html(row.unit), cells))
    return BuiltHtml("".join(lines))


def _verdict_html(name: Any, flag: Any) -> str:
    """_macros.html.j2's verdict(name, flag)."""
    return '<span class="state v-%s">%s</span>' % (_html(flag or "ok"), _html(name))


def _long_html(text: Any, folded: Any) -> str:
    """_macros.html.j2's long(text, folded)."""
    if folded:
        return "<details><summary>%s characters</summary>%s</details>" % (_html(len(text)), _html(text))
    return _html(text)


def _part(value: Any, name: str) -> Any:
    """value.name as Jinja reads it: an attribute, or a mapping's key."""
    return value[name] if isinstance(value, Mapping) else getattr(value, name)


def cell_html(c: Any) -> BuiltHtml:
    """One table cell of a dossier section, as _macros.html.j2's cell macro wrote it (built here: a probe's section of
    8 GPUs has hundreds, and a macro call each was a tenth of a dossier's cost)."""
    flag, note = _part(c, "flag"), _part(c, "note")
    if flag == "na" and note and report_notes.current() is not None:
        return BuiltHtml('<td class="f-na">%s %s</td>' % (_html(_part(c, "text")), reason_html(note)))
    return BuiltHtml("<td%s%s>%s%s</td>" % (' class="f-%s"' % _html(flag) if flag else "",
                                            ' title="%s"' % _html(note) if note else "", _html(_part(c, "text")),
                                            ' <span class="reason">(%s)</span>' % _html(note) if flag == "na" and note else ""))


def check_rows_html(rows: Sequence[Mapping[str, Any]]) -> BuiltHtml:
    """The rows of the dossier's "Other checks" table, as _verdict.html.j2 wrote them with a loop (built here: a host
    of 8 GPUs has over a hundred checks, and the loop's macro calls were a fifth of a dossier's cost; docs/scale.md)."""
    lines = []
    for c in rows:
        flagged = ' class="f-%s"' % _html(c["flag"]) if c["flag"] in ("bad", "warn") else ""
        lines.append('<tr%s><td>%s</td><td>%s<span class="note"><code>%s</code></span></td><td>%s</td>\n'
                     '<td>%s</td><td>%s</td></tr>\n'
                     % (flagged, _verdict_html(c["status"], c["flag"]), _html(c["title"]), _html(c["id"]), _html(c["gpu"]),
                        evidence_html(c), _html(c["reason"])))
    return BuiltHtml("".join(lines))


def evidence_html(c: Mapping[str, Any]) -> BuiltHtml:
    """A check's value, its reference, threshold and the reference's source in one cell, as the "What to do" table's
    evidence shows them: the source and threshold as notes under the numbers, so the "why" keeps its room at 1280 px."""
    text = _long_html(c["value"], c["long"])
    if c["reference"] != "—":
        text += " vs %s" % _long_html(c["reference"], c["reference_long"])
    for note in (c["threshold"], c["reference_source"]):
        if note != "—":
            text += '<span class="note">%s</span>' % _html(note)
    return BuiltHtml(text)


def change_rows_html(rows: Sequence[Mapping[str, Any]]) -> BuiltHtml:
    """The rows of the dossier's before-and-after table (a nightly run's drift: one per metric and setting), as
    _verdict.html.j2 wrote them with a loop."""
    lines = []
    for c in rows:
        flagged = ' class="f-%s"' % _html(c["flag"]) if c["flag"] in ("bad", "warn") else ""
        if c["unchanged"]:
            values = '<td colspan="2">unchanged: %s</td>' % _long_html(c["after"], c["after_long"])
        else:
            values = "<td>%s</td><td>%s</td>" % (_long_html(c["before"], c["before_long"]), _long_html(c["after"], c["after_long"]))
        lines.append('<tr%s><td>%s<span class="note"><code>%s</code></span></td><td>%s</td>\n%s<td>%s</td><td>%s</td></tr>\n'
                     % (flagged, _html(c["title"]), _html(c["what"]), _html(c["gpu"]), values,
                        _verdict_html(c["status"], c["flag"]), _html(c["reason"])))
    return BuiltHtml("".join(lines))


def change_rows_markdown(rows: Sequence[Mapping[str, Any]]) -> MarkdownText:
    """The Markdown twin of change_rows_html."""
    return MarkdownText("".join(
        "| %s (%s) | %s | %s | %s | %s | %s |\n"
        % (markdown_escape(c["title"]), markdown_escape(c["what"]), markdown_escape(c["gpu"]), markdown_escape(c["before"]),
           markdown_escape(c["after"]), status_markdown(c["status"], c["flag"]), markdown_escape(c["reason"]))
        for c in rows))


def check_rows_markdown(rows: Sequence[Mapping[str, Any]]) -> MarkdownText:
    """The Markdown twin of check_rows_html: the rows _verdict.md.j2 wrote with a loop."""
    return MarkdownText("".join(
        "| %s | %s (%s) | %s | %s | %s | %s | %s | %s |\n"
        % (status_markdown(c["status"], c["flag"]), markdown_escape(c["title"]), markdown_escape(c["id"]),
           markdown_escape(c["gpu"]), markdown_escape(c["value"]), markdown_escape(c["reference"]),
           markdown_escape(c["reference_source"]), markdown_escape(c["threshold"]), markdown_escape(c["reason"]))
        for c in rows))


def measurement_rows_markdown(probe: Mapping[str, Any], rows: Sequence[Any], judged: bool) -> MarkdownText:
    """The Markdown twin of measurement_rows_html: the table rows dossier.md.j2 wrote with a loop."""
    lines = []
    escaped = _markdown_escaped  # a FlatRow's fields are plain str
    references = probe["references"]
    no_references = " %s" % references_text([])
    for row in rows:
        if judged:
            refs = references.get(row.path)
            tail = " %s" % references_text(refs) if refs else no_references
        else:
            tail = ""
        if row.unavailable is not None:
            lines.append("| %s | unavailable %s | |%s\n" % (escaped(row.path), reason_markdown(row.unavailable), tail))
        else:
            lines.append("| %s | %s | %s |%s\n" % (escaped(row.path), escaped(row.value), escaped(row.unit), tail))
    return MarkdownText("".join(lines))


def _environment(markdown: bool) -> Environment:
    # auto_reload off: the templates are the collection's own and do not change while a report renders (a stat of each
    # template at every get_template was 3 % of a dossier's cost)
    # a probe's own section templates live in its package, named from the packages' folder ("health/templates/...")
    loader = ChoiceLoader([FileSystemLoader(TEMPLATE_DIR), FileSystemLoader(PACKAGES_DIR)])
    common = dict(loader=loader, undefined=StrictUndefined, auto_reload=False,
                  trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    if markdown:
        environment = Environment(autoescape=False, finalize=markdown_escape, **common)
        environment.globals.update(cell_text=cell_text, flagged=status_markdown, references_text=references_text,
                                   measurement_rows=measurement_rows_markdown, check_rows=check_rows_markdown,
                                   change_rows=change_rows_markdown, reason=reason_markdown)
        return environment
    environment = Environment(autoescape=select_autoescape(["html", "j2"]), finalize=_html_finalize, **common)
    environment.globals.update(measurement_rows=measurement_rows_html, check_rows=check_rows_html, cell_html=cell_html,
                               change_rows=change_rows_html, reason=reason_html, evidence=evidence_html)
    return environment


HTML = _environment(markdown=False)
MARKDOWN = _environment(markdown=True)


def compile_templates() -> None:
    """Compile every page and section template now, so that forked workers inherit them compiled instead of each
    compiling its own (a quarter of a CPU second per worker)."""
    for environment, suffix in ((HTML, ".html.j2"), (MARKDOWN, ".md.j2")):
        for name in environment.list_templates(filter_func=lambda name, ending=suffix: name.endswith(ending)):
            environment.get_template(name)


def href(*parts: str) -> str:
    """A relative link to a file under the run; '%' in host directory names must reach the browser as '%25'."""
    return "/".join(quote(part, safe="") for part in parts)


def flagged_markdown(text: str, note: str = "", flag: str = "") -> MarkdownText:
    """A cell for Markdown, which has no colours: the note inline, a warning or failure in bold with its flag."""
    body = markdown_escape(text) + (" (%s)" % markdown_escape(note) if note else "")
    return MarkdownText("**%s** (%s)" % (body, "outlier or drift" if flag == "warn" else "failing")
                        if flag in ("bad", "warn") else body)
