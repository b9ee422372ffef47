"""Render a run's dossiers (one per host) and its fleet index, as self-contained HTML and as Markdown."""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import shlex
import time
from collections import OrderedDict
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import quote

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from ..act.outcome import host_outcome
from ..judge.model import GATING_VERDICTS, FleetJudgement, HostVerdict, blocks_gate, error_verdict
from ..judge.weakened_rules import named_hosts
from ..control_chars import escape_control
from .exports import export_json_text, fleet_json_chunks, junit_chunks, prometheus_chunks, run_timestamp
from .rerun import rerun_command
from ..store.atomic import Text
from ..store.paths import (DOSSIER_FILES, DOSSIER_HTML_FILE, DOSSIER_MD_FILE, FLEET_EXPORT_FILES, FLEET_INDEX_FILES, HOST_REPORT_FILES,
                          MEASUREMENTS_FILES, MEASUREMENTS_HTML_FILE, MEASUREMENTS_MD_FILE, OUTCOMES_DIR, outcome_file_name)
from ..probe_kit.declaration import ProbeSection
from ..probe_kit.registry import PACKAGES_DIR, probe_catalogue, sections
from .parallel import run_large_jobs_over_the_cores, run_over_the_cores, worker_count
from .python_view import python_view
from .index_columns import fold_reasons, shown_metric_positions, split_metrics
from . import notes as report_notes
from ...module_utils.envelope_statuses import FAILED_STATUSES, STATUS_RANK
from ..store.stored_run import HostModel, ProbeEntry, RunModel, load_run
from .values import flatten, format_value
from ..unmatched_kinds import run_profile, unmeasured_probes
from .verdicts import (NOT_JUDGED, VERDICT_FLAG, drift_notes, fold_unmatched, gate_sentence, headline, host_action,
                              measurement_references, metric_cell, metric_columns, proof_note, root_actions, shown_reasons,
                              statistics_rows, verdict_counts, verdict_rank, verdict_view)

# The index's first screen lists this many hosts that did not pass, worst first; the table below has them all.
TODO_HOSTS = 10
# A rule the run disabled or downgraded names this many of its hosts in the index.
WEAKENED_HOSTS_NAMED = 20
TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")


# {probe: its own summary}, from the probes' declarations; a probe without one renders through the generic table alone.
PROBE_SECTIONS: Dict[str, ProbeSection] = sections()


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


def href(*parts: str) -> str:
    """A relative link to a file under the run; '%' in host directory names must reach the browser as '%25'."""
    return "/".join(quote(part, safe="") for part in parts)


def _command_text(command: Any) -> str:
    if isinstance(command, list):
        return shlex.join(str(part) for part in command)
    return format_value("command", command) if command is not None else "not recorded"


# The last few results of the functions below, by the identity of their inputs: a host's HTML and Markdown dossiers
# (and its index rows) read the same data one after the other. Each entry keeps its inputs alive, so an id is never
# reused while the entry is kept.
_BY_IDENTITY: "OrderedDict[tuple, Tuple[tuple, Any]]" = OrderedDict()
# A host of every probe has about 50 entries (each probe's rows, environment, section view and references); the four
# pages of a host must find them all.
_BY_IDENTITY_KEPT = 160


def _once_per_input(function: Callable[..., Any], *inputs: Any) -> Any:
    key = (function,) + tuple(id(value) for value in inputs)
    found = _BY_IDENTITY.get(key)
    if found is not None and all(kept is value for kept, value in zip(found[0], inputs)):
        return found[1]
    result = function(*inputs)
    _BY_IDENTITY[key] = (inputs, result)
    while len(_BY_IDENTITY) > _BY_IDENTITY_KEPT:
        _BY_IDENTITY.popitem(last=False)
    return result


def _flattened(data: Any) -> list:
    return _once_per_input(flatten, data)


def _grouped_rows(data: Any) -> List[Tuple[str, list]]:
    groups: Dict[str, list] = {}
    for row in _flattened(data):
        groups.setdefault(row.section, []).append(row)
    return list(groups.items())


def unavailable_by_reason(unavailable: Sequence[Tuple[str, str]]) -> List[Tuple[str, List[str]]]:
    """(reason, the fields it holds for) of a probe's unavailable fields, in the order the reasons first occur: a
    reason that holds for the same field of every GPU is one row."""
    fields: Dict[str, List[str]] = {}
    for path, reason in unavailable:
        fields.setdefault(reason, []).append(path)
    return list(fields.items())


def _measurements_href(entry: ProbeEntry, markdown: bool) -> str:
    """The probe's part of the measurements page: its heading's id in HTML, the anchor a Markdown viewer gives the
    heading "Probe <name>: <status>" (GitHub's: lower case, spaces as hyphens, punctuation dropped)."""
    if markdown:
        slug = re.sub(r"[^\w\- ]", "", "probe %s: %s" % (entry.probe, entry.status)).lower().replace(" ", "-")
        return href(MEASUREMENTS_FILES[1]) + "#" + quote(slug, safe="")
    return href(MEASUREMENTS_FILES[0]) + "#probe-" + quote(entry.probe, safe="")


def probe_view(entry: ProbeEntry, markdown: bool, host: str = "HOST") -> Dict[str, Any]:
    envelope = entry.envelope
    section = PROBE_SECTIONS.get(entry.probe)
    reproducibility = [
        ("run id", format_value("run_id", envelope.get("run_id", "not recorded"))),
        ("collection version", format_value("collection_version", envelope.get("collection_version", "not recorded"))),
        ("schema version", format_value("schema_version", envelope.get("schema_version", "not recorded"))),
        ("probe sha256", format_value("probe_sha256", envelope.get("probe_sha256", "not recorded"))),
        ("schemas sha256 (validated against when stored)",
         format_value("schemas_sha256", envelope.get("schemas_sha256", "not recorded"))),
        ("host (as the probe saw it)", format_value("host", envelope.get("host", "not recorded"))),
        ("started", format_value("started", envelope.get("started", "not recorded"))),
        ("duration", format_value("duration_s", envelope.get("duration_s", "not recorded"))),
    ]
    command = _command_text(envelope.get("command"))
    rerun = rerun_command(envelope, host)
    return {
        "name": entry.probe,
        "status": entry.status,
        "reason": entry.reason,
        "json_href": href(entry.json_file),
        "json_file": entry.json_file,
        "raw_href": href(entry.raw_file) if entry.raw_file else "",
        "raw_file": entry.raw_file or "",
        "unavailable": entry.unavailable,
        "unavailable_by_reason": unavailable_by_reason(entry.unavailable),
        "measurement_count": len(_flattened(entry.data)),
        "measurements_href": _measurements_href(entry, markdown),
        "measurements_of": entry.data,
        "environment": _flattened(envelope.get("environment", {})),
        "reproducibility": reproducibility,
        "command": markdown_code_block(command) if markdown else command,
        "rerun": markdown_code_block(rerun) if markdown else rerun,
        "section_template": (section.markdown_template if markdown else section.html_template) if section else "",
        "section": _once_per_input(section.view, entry.data) if section else {},
    }


def _probe_references(probe: Dict[str, Any], verdict: Optional[HostVerdict]) -> Dict[str, List[Dict[str, Any]]]:
    if verdict is None:
        return {}
    return _once_per_input(_references_of, verdict, probe["name"], probe["measurements_of"])


def _references_of(verdict: HostVerdict, probe_name: str, data: Any) -> Dict[str, List[Dict[str, Any]]]:
    paths = [row.path for row in _flattened(data)]
    return measurement_references(verdict.checks, probe_name, paths)


def _probe_views(host: HostModel, markdown: bool) -> List[Dict[str, Any]]:
    views = {entry.probe: probe_view(entry, markdown, host.name) for entry in host.probes.values()}
    return [views[name] for name in probe_catalogue().machine_first(views)]


def _measurements_context(host: HostModel, run: RunModel, markdown: bool,
                          judgement: Optional[FleetJudgement] = None) -> Dict[str, Any]:
    """The measurements page: every value of every probe result, with what the judge held it against."""
    probes = _probe_views(host, markdown)
    verdict = judgement.hosts.get(host.name) if judgement is not None else None
    for probe in probes:
        probe["measurements"] = _grouped_rows(probe["measurements_of"])
        probe["references"] = _probe_references(probe, verdict)
    return {"host": host, "run": run, "probes": probes, "judged": judgement is not None,
            "verdict": verdict.verdict if verdict is not None else None,
            "dossier_href": DOSSIER_FILES[1] if markdown else DOSSIER_FILES[0],
            "index_href": "../index.md" if markdown else "../index.html"}


def _host_context(host: HostModel, run: RunModel, markdown: bool,
                  judgement: Optional[FleetJudgement] = None) -> Dict[str, Any]:
    probes = _probe_views(host, markdown)
    verdict = judgement.hosts.get(host.name) if judgement is not None else None
    return {"host": host, "run": run, "probes": probes, "markdown": markdown,
            "measurements_href": MEASUREMENTS_FILES[1] if markdown else MEASUREMENTS_FILES[0],
            "index_href": "../index.md" if markdown else "../index.html",
            "unavailable_total": sum(len(probe["unavailable"]) for probe in probes),
            "judged": judgement is not None,
            "verdict": verdict_view(verdict, texts=judgement.texts, hosts_of_sku=lambda: _hosts_of_sku(judgement, verdict),
                                    gate_enforced=judgement.gate_enforced)
            if judgement is not None else {},
            "python": python_view(host.inputs),
            "previous_run_id": judgement.previous_run_id if judgement is not None else None}


def _hosts_of_sku(judgement: FleetJudgement, verdict: Optional[HostVerdict]) -> Optional[int]:
    """How many judged hosts of this run share the host's SKU (the peers a fleet comparison had)."""
    if verdict is None:
        return None
    return sum(1 for other in judgement.hosts.values() if other.sku == verdict.sku and other.verdict != "unreachable")


def _render_with_notes(environment: Environment, template: str, context: Dict[str, Any]) -> str:
    """A page that states each reason a field could not be read once, in its list of notes (report_notes)."""
    notes = report_notes.PageNotes()
    with report_notes.collecting(notes):
        return environment.get_template(template).render(page_notes=notes, **context)


def _markdown_links(context: Dict[str, Any]) -> Dict[str, Any]:
    context["index_link"] = markdown_link("fleet index", context["index_href"])
    if "measurements_href" in context:
        context["measurements_link"] = markdown_link(context["measurements_href"], context["measurements_href"])
    for probe in context["probes"]:
        probe["json_link"] = markdown_link(probe["json_file"], probe["json_href"])
        probe["raw_link"] = markdown_link(probe["raw_file"], probe["raw_href"]) if probe["raw_file"] else ""
        probe["measurements_link"] = markdown_link("%s: every value of %s" % (MEASUREMENTS_MD_FILE, probe["name"]),
                                                   probe["measurements_href"])
    return context


def render_host_dossier_html(host_model: HostModel, run_model: RunModel, judgement: Optional[FleetJudgement] = None) -> str:
    context = _host_context(host_model, run_model, markdown=False, judgement=judgement)
    return _render_with_notes(HTML, "dossier.html.j2", context)


def render_host_dossier_markdown(host_model: HostModel, run_model: RunModel,
                                 judgement: Optional[FleetJudgement] = None) -> str:
    context = _markdown_links(_host_context(host_model, run_model, markdown=True, judgement=judgement))
    return _render_with_notes(MARKDOWN, "dossier.md.j2", context)


def render_host_measurements_html(host_model: HostModel, run_model: RunModel,
                                  judgement: Optional[FleetJudgement] = None) -> str:
    """measurements.html beside the dossier: every value of every probe result (the dossier links each probe's part)."""
    context = _measurements_context(host_model, run_model, markdown=False, judgement=judgement)
    return _render_with_notes(HTML, "measurements.html.j2", context)


def render_host_measurements_markdown(host_model: HostModel, run_model: RunModel,
                                      judgement: Optional[FleetJudgement] = None) -> str:
    context = _markdown_links(_measurements_context(host_model, run_model, markdown=True, judgement=judgement))
    context["dossier_link"] = markdown_link("dossier", context["dossier_href"])
    return _render_with_notes(MARKDOWN, "measurements.md.j2", context)


def index_columns(host: HostModel) -> Dict[str, Any]:
    """The host's columns of the fleet index from the result of the probe that describes the machine, worked out once
    per host."""
    if host.index_columns is None:
        machine = probe_catalogue().machine
        entry = host.probes.get(machine.probe) if machine is not None else None
        if machine is None or machine.declaration.index_columns is None:
            host.index_columns = {}
        elif entry is None:
            host.index_columns = dict(machine.declaration.not_run_columns)
        else:
            host.index_columns = machine.declaration.index_columns(entry.data)
    return host.index_columns


def host_summary(host: HostModel, markdown: bool) -> Dict[str, Any]:
    columns = index_columns(host)
    dossier = href(host.dir_name, DOSSIER_MD_FILE if markdown else DOSSIER_HTML_FILE)
    summary = dict(columns, host=host, dossier_href=dossier, folded_state_reasons=fold_reasons(host.reasons))
    if markdown:
        summary["dossier_link"] = markdown_link(host.name, dossier)
    return summary


def flagged_markdown(text: str, note: str = "", flag: str = "") -> MarkdownText:
    """A cell for Markdown, which has no colours: the note inline, a warning or failure in bold with its flag."""
    body = markdown_escape(text) + (" (%s)" % markdown_escape(note) if note else "")
    return MarkdownText("**%s** (%s)" % (body, "outlier or drift" if flag == "warn" else "failing")
                        if flag in ("bad", "warn") else body)


def _groups_of(host: HostModel, verdict: Optional[HostVerdict]) -> List[str]:
    return list(host.groups) or (list(verdict.groups) if verdict is not None else [])


def _judged_row(host: HostModel, judgement: FleetJudgement, metrics: List[Dict[str, str]], markdown: bool) -> Dict[str, Any]:
    verdict = judgement.hosts.get(host.name)
    view = verdict_view(verdict, include_checks=False)
    reasons, more = shown_reasons(view["reasons"])
    action = host_action(verdict, judgement.texts)
    row = dict(host_summary(host, markdown), verdict=view["verdict"], flag=view["flag"], sku=view["sku"], action=action,
               sku_reason=view["sku_reason"], reasons=reasons, more_reasons=more, all_reasons=view["reasons"],
               folded_reasons=fold_reasons(view["reasons"]), proof_note=proof_note(verdict),
               groups=_groups_of(host, verdict), drift=drift_notes(verdict),
               metrics=[metric_cell(judgement, verdict, column["metric"], column["unit"]) if verdict is not None
                        else {"text": "—", "note": "", "flag": "", "title": ""} for column in metrics])
    if markdown:
        row["metric_cells"] = [flagged_markdown(cell["text"], cell["note"], cell["flag"]) for cell in row["metrics"]]
        row["drift_cell"] = MarkdownText("; ".join(flagged_markdown(note["text"], "", note["flag"]) for note in row["drift"])) \
            if row["drift"] else "—"
    return row


def _judged_index_context(run: RunModel, judgement: FleetJudgement, markdown: bool) -> Dict[str, Any]:
    metrics = metric_columns(judgement)
    rows = [_judged_row(host, judgement, metrics, markdown) for host in run.hosts]
    rows.sort(key=lambda row: (-verdict_rank(row["verdict"]), row["host"].name))
    shown = shown_metric_positions(metrics, [[cell["flag"] for cell in row["metrics"]] for row in rows])
    for row in rows:
        cells = row["metric_cells"] if markdown else row["metrics"]
        row["shown_metrics"], row["other_metrics"] = split_metrics(cells, metrics, shown)
        row["other_flagged"] = sum(1 for position, cell in enumerate(row["metrics"])
                                   if position not in shown and cell["flag"] in ("bad", "warn"))
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for row in rows:
        for group in row["groups"] or ["(no group)"]:
            groups.setdefault(group, []).append(row)
    group_rows = [{"name": name, "total": len(members),
                   "counts": [(verdict, count) for verdict, count in verdict_counts(row["verdict"] for row in members) if count],
                   "not_pass": [row["host"].name for row in members if row["verdict"] != "pass"]}
                  for name, members in sorted(groups.items())]
    profile, probes = run_profile(run)
    unmatched, not_run = fold_unmatched(judgement.unmatched_rules, profile, probes, judgement.texts, unmeasured_probes(run))
    counts = verdict_counts(row["verdict"] for row in rows)
    todo = sorted((row for row in rows if row["verdict"] != "pass"),
                  key=lambda row: (-verdict_rank(row["verdict"]), row["action"]["rank"], row["host"].name))
    return {"run": run, "judgement": judgement, "rows": rows, "metrics": [metrics[position] for position in shown],
            "other_metrics": len(metrics) - len(shown), "groups": group_rows,
            "counts": counts, "headline": headline(counts), "verdict_flag": VERDICT_FLAG, "gate": gate_sentence(judgement),
            "todo": todo[:TODO_HOSTS], "todo_more": max(0, len(todo) - TODO_HOSTS), "not_run": not_run, "profile": profile,
            "failed": [row for row in rows if row["verdict"] in GATING_VERDICTS or row["verdict"] == NOT_JUDGED],
            "unmatched": unmatched, "statistics": statistics_rows(judgement), "setting_minorities": judgement.setting_minorities,
            "slow_probes": judgement.slow_probes,
            "previous_run_id": judgement.previous_run_id, "cross_host": _fleet_views(run),
            "versions": ", ".join(run.collection_versions()) or "not recorded", "weakened": weakened_rows(judgement)}


def weakened_rows(judgement: FleetJudgement) -> List[Dict[str, Any]]:
    """The index's rows of the shipped rules the run disabled or downgraded: each with its title and its hosts named
    (at most WEAKENED_HOSTS_NAMED; fleet.json lists them all)."""
    return [dict(entry, title=judgement.texts.of(entry["rule"]).title, host_count=len(entry["hosts"]),
                 hosts_text=named_hosts(entry["hosts"], WEAKENED_HOSTS_NAMED)) for entry in judgement.weakened_rules]


def _fleet_views(run: RunModel) -> List[Dict[str, Any]]:
    """The rows of every probe section that shows the probe across hosts (ProbeSection.fleet_view)."""
    return [row for section in sections().values() if section.fleet_view is not None for row in section.fleet_view(run.hosts)]


def _index_context(run: RunModel, markdown: bool, previous_run_id: Optional[str] = None) -> Dict[str, Any]:
    rows = [host_summary(host, markdown) for host in run.hosts_worst_first()]
    groups = []
    for name, hosts in run.groups().items():
        counts: Dict[str, int] = {}
        for host in hosts:
            counts[host.state] = counts.get(host.state, 0) + 1
        groups.append({"name": name, "total": len(hosts),
                       "counts": sorted(counts.items(), key=lambda item: -STATUS_RANK.get(item[0], 0)),
                       "not_ok": [host.name for host in hosts if host.state != "ok"]})
    return {"run": run, "rows": rows, "counts": run.counts_by_state(), "groups": groups,
            "failed": [row for row in rows if row["host"].state in FAILED_STATUSES],
            "previous_run_id": previous_run_id,
            "versions": ", ".join(run.collection_versions()) or "not recorded"}


def render_fleet_index_html(run_model: RunModel, judgement: Optional[FleetJudgement] = None,
                            previous_run_id: Optional[str] = None) -> str:
    if judgement is not None:
        return HTML.get_template("index_judged.html.j2").render(**_judged_index_context(run_model, judgement, markdown=False))
    return HTML.get_template("index.html.j2").render(**_index_context(run_model, markdown=False, previous_run_id=previous_run_id))


def render_fleet_index_markdown(run_model: RunModel, judgement: Optional[FleetJudgement] = None,
                                previous_run_id: Optional[str] = None) -> str:
    if judgement is not None:
        return MARKDOWN.get_template("index_judged.md.j2").render(**_judged_index_context(run_model, judgement, markdown=True))
    return MARKDOWN.get_template("index.md.j2").render(**_index_context(run_model, markdown=True, previous_run_id=previous_run_id))


def _inside(root: str, path: str) -> bool:
    root_real, path_real = os.path.realpath(root), os.path.realpath(path)
    return os.path.commonpath([root_real, path_real]) == root_real and path_real != root_real


# Measured on 2 cores (docs/scale.md, "Issue 18, fourth part"): the fleet outputs side by side took 2.5-3.4 s instead of
# 4.2-5.5 s at 1,000 hosts, for about 30 MiB more; at 10,000 hosts 35 s instead of 40, for 160 MiB more (2,034 MiB at
# the peak, against the 2 GiB bound). Between the two the seconds saved shrink as the memory grows.
FLEET_OUTPUTS_FORKED_UP_TO_HOSTS = 4000
EXPORT_FILES = FLEET_EXPORT_FILES


def render_fleet_outputs(run: RunModel, write: Callable[[str, Text], None], judgement: Optional[FleetJudgement] = None,
                         previous_run_id: Optional[str] = None, processes: int = 1, gated: bool = True) -> None:
    """The fleet-level files: index.html and index.md; with a judgement fleet.json, junit.xml and gpufleet.prom.

    Each is rendered and written on its own, so that one that fails does not keep the others from being written;
    raises ValueError naming every one that failed, after writing the rest. The exports are handed to write as chunks
    (a host at a time): the checks of 10,000 hosts as one text, or one element tree, would take gigabytes.

    processes: forked processes that render them side by side (report_parallel), for a run large enough that each
    takes seconds; write must then work from a forked process (write a file, not fill the caller's memory).
    gated: whether the run enforces its gate, which junit.xml follows (report_exports.junit_chunks).
    """
    # Named from store.paths, which keeps every host's directory off these names.
    outputs: List[Tuple[str, Callable[[], Text]]] = list(zip(FLEET_INDEX_FILES, (
        lambda: render_fleet_index_html(run, judgement, previous_run_id),
        lambda: render_fleet_index_markdown(run, judgement, previous_run_id))))
    if judgement is not None:
        outputs += list(zip(FLEET_EXPORT_FILES, (
            lambda: fleet_json_chunks(judgement, run),
            lambda: junit_chunks(judgement, gated, run),
            lambda: prometheus_chunks(judgement, run, run_timestamp(run)))))

    def one_output(position: int) -> Optional[str]:
        name, render = outputs[position]
        try:
            write(os.path.join(run.run_dir, name), render())
            return None
        except Exception as exc:  # pylint: disable=broad-exception-caught
            return "%s: %s: %s" % (name, type(exc).__name__, exc)

    outcomes = run_large_jobs_over_the_cores(len(outputs), one_output, processes)
    failed = [outcomes[position] for position in range(len(outputs)) if outcomes[position] is not None]
    if failed:
        raise ValueError("could not write %s" % "; ".join(failed))


def _host_outputs(host: HostModel, run: RunModel, judgement: Optional[FleetJudgement],
                  metrics: List[Dict[str, str]]) -> List[Tuple[str, str]]:
    """(file name, text) of the host's dossiers, after building its fleet-index row, which must render too (the
    Markdown row: it is built from the same calls as the HTML one, and more)."""
    if judgement is not None:
        _judged_row(host, judgement, metrics, markdown=True)
    else:
        host_summary(host, markdown=True)
    # One format after the other: the second page of a format finds the rows and views the first computed.
    return [(DOSSIER_HTML_FILE, render_host_dossier_html(host, run, judgement)),
            (MEASUREMENTS_HTML_FILE, render_host_measurements_html(host, run, judgement)),
            (DOSSIER_MD_FILE, render_host_dossier_markdown(host, run, judgement)),
            (MEASUREMENTS_MD_FILE, render_host_measurements_markdown(host, run, judgement))]


def _without_results(host: HostModel, reason: str) -> HostModel:
    """The host as the report shows it when its results broke the rendering: in error, its probes not shown."""
    return dataclasses.replace(host, probes={}, state="error", reasons=[reason], index_columns=None)


def _write_host(host: HostModel, host_path: str, run: RunModel, judgement: Optional[FleetJudgement],
                metrics: List[Dict[str, str]], write: Callable[[str, str], None]) -> Optional[HostModel]:
    """Render and write one host's dossiers; on any exception the host stands in error (returned) and the rest go on."""
    try:
        for name, text in _host_outputs(host, run, judgement, metrics):
            write(os.path.join(host_path, name), text)
        return None
    except Exception as exc:  # pylint: disable=broad-exception-caught
        failure = exc
    reason = "rendering this host's report raised %s: %s; its results are kept in %s/" % (
        type(failure).__name__, failure, host.dir_name)
    stand_in = _without_results(host, reason)
    if judgement is not None:
        judgement.hosts[host.name] = error_verdict(host.name, "host.rendered", reason,
                                                   _groups_of(host, judgement.hosts.get(host.name)))
    try:
        for name, text in _host_outputs(stand_in, run, judgement, metrics):
            write(os.path.join(host_path, name), text)
    except Exception:  # pylint: disable=broad-exception-caught
        pass  # Its directory cannot be written at all (e.g. a name too long): the fleet outputs still say why.
    return stand_in


def run_started(run: RunModel) -> str:
    """When the run started, ISO 8601 UTC: its first playbook run's start on the controller (run.json), else from the
    run id or the probes (report_exports.run_timestamp)."""
    starts = sorted(str(writer.get("started")) for writer in run.writers
                    if isinstance(writer, Mapping) and isinstance(writer.get("started"), str) and writer.get("started"))
    return starts[0] if starts else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(run_timestamp(run)))


def _write_outcome(run: RunModel, host: HostModel, judgement: FleetJudgement, started: str,
                   write: Callable[[str, str], None]) -> Optional[str]:
    """Write the host's outcome (act/outcome.py: its verdict and root cause, nothing acted on yet); why not, or None."""
    verdict = judgement.hosts.get(host.name)
    if verdict is None:
        return None
    document = host_outcome(judgement.run_id, started, host.name, verdict.verdict, verdict.reasons, blocks_gate(verdict),
                            "%s/%s" % (host.dir_name, DOSSIER_HTML_FILE), root_actions(verdict, judgement.texts))
    try:
        write(os.path.join(run.run_dir, OUTCOMES_DIR, outcome_file_name(host.name)), export_json_text(document))
        return None
    except Exception as exc:  # pylint: disable=broad-exception-caught
        return "the outcome of %s: %s: %s" % (host.name, type(exc).__name__, exc)


def render_run(run_dir: str, expected_hosts: Iterable[str], host_groups: Optional[Mapping[str, Sequence[str]]],
               write: Callable[[str, Text], None], judgement: Optional[FleetJudgement] = None,
               previous_run_id: Optional[str] = None, loaded: Optional[RunModel] = None,
               workers: Optional[int] = None, gated: bool = True) -> RunModel:
    """Render every dossier and the fleet index, write(path, text) each, and return the run as loaded.

    workers: processes that render the dossiers (default: one per usable core, for runs large enough; report_parallel).
    gated: whether the run enforces its gate (gpufleet_gate): the pages and fleet.json say so, and junit.xml then fails a
    warn host the gate refuses.

    loaded: the run as the caller already read it (load_run with the same hosts, every judged host among them),
    so that the results are not read from disk a second time.

    Paths: <run_dir>/<host.dir_name>/dossier.html and .md, and measurements.html and .md (every value of its results),
    for every host of the returned run; <run_dir>/index.html and .md; with a judgement also <run_dir>/fleet.json,
    junit.xml and gpufleet.prom, and each judged host's outcome, <run_dir>/outcomes/<host.dir_name>.json (written
    beside its dossier, over the cores). A judged host that has no results on disk is rendered too (as a host without results);
    previous_run_id, when given, overrides judgement.previous_run_id.

    A host whose dossier or index row raises while rendered or written is shown in error with the exception (its
    entry in run.hosts and in judgement.hosts is replaced, so the caller sees it too) and every other host and the
    fleet outputs are still written. A host whose directory is a link gets no dossier. Raises ValueError, before
    writing anything, if a path would resolve outside run_dir, and after writing the rest if a fleet output could not
    be written (a host's outcome too).
    """
    expected = list(expected_hosts)
    groups = dict(host_groups or {})
    if judgement is not None:
        if previous_run_id is not None and previous_run_id != judgement.previous_run_id:
            judgement = dataclasses.replace(judgement, previous_run_id=previous_run_id)
        judgement.gate_enforced = gated
        known = set(expected)
        expected += sorted(name for name in judgement.hosts if name not in known)
        for name, verdict in judgement.hosts.items():
            if not groups.get(name) and verdict.groups:
                groups[name] = list(verdict.groups)
    run = loaded if loaded is not None else load_run(run_dir, expected, groups)
    # A host whose directory is a link gets no dossier (nothing is written through a link); the index says why.
    dossiers = [(host, os.path.join(run.run_dir, host.dir_name)) for host in run.hosts
                if not os.path.islink(os.path.join(run.run_dir, host.dir_name))]
    fleet_paths = [os.path.join(run.run_dir, name) for name in FLEET_INDEX_FILES]
    if judgement is not None:
        fleet_paths += [os.path.join(run.run_dir, name) for name in EXPORT_FILES]
    for path in [os.path.join(host_path, name) for unused_host, host_path in dossiers for name in HOST_REPORT_FILES] + fleet_paths:
        if not _inside(run.run_dir, path):
            raise ValueError("refusing to write %s: it resolves outside the run directory %s" % (path, run.run_dir))
    # Rendered and written one host at a time (over the controller's cores), so that a fleet of thousands never holds
    # every dossier in memory, and one host whose results break the rendering is shown in error while every other
    # host is reported.
    metrics = metric_columns(judgement) if judgement is not None else []
    started = run_started(run)

    def one_host(position: int) -> Tuple[Optional[Dict[str, Any]], Optional[Tuple[HostModel, Optional[HostVerdict]]],
                                         Optional[str]]:
        """(the host's index columns, worked out here, where its results are read anyway; its stand-in and verdict if
        its rendering failed; why its outcome was not written)."""
        host, host_path = dossiers[position]
        stand_in = _write_host(host, host_path, run, judgement, metrics, write)
        unwritten = _write_outcome(run, host, judgement, started, write) if judgement is not None else None
        if stand_in is None:
            return host.index_columns, None, unwritten
        return stand_in.index_columns, (stand_in, judgement.hosts.get(host.name) if judgement is not None else None), unwritten

    outcomes = run_over_the_cores(len(dossiers), one_host, workers)
    unwritten = [outcomes[position][2] for position in range(len(dossiers)) if outcomes[position][2]]
    if judgement is not None:  # a host whose directory is a link has no dossier, but its verdict has an outcome
        rendered = {host.name for host, unused_path in dossiers}
        unwritten += [why for why in (_write_outcome(run, host, judgement, started, write) for host in run.hosts
                                      if host.name not in rendered) if why]
    for position in range(len(dossiers)):
        columns, failed, unused_unwritten = outcomes[position]
        dossiers[position][0].index_columns = columns  # set in the worker that rendered it, where forked
        if failed is None:
            continue
        stand_in, verdict = failed
        host, host_path = dossiers[position]
        run.hosts[run.hosts.index(host)] = stand_in
        dossiers[position] = (stand_in, host_path)
        if judgement is not None and verdict is not None:
            judgement.hosts[host.name] = verdict  # set in the worker that rendered it, where forked
    # The fleet outputs side by side where the dossiers were rendered so (a large run): each then takes seconds. Not
    # past FLEET_OUTPUTS_FORKED_UP_TO_HOSTS, where each forked process's copy of the pages it touches costs more memory
    # than the seconds are worth.
    processes = worker_count(len(dossiers), workers) if len(dossiers) <= FLEET_OUTPUTS_FORKED_UP_TO_HOSTS else 1
    render_fleet_outputs(run, write, judgement, previous_run_id, processes=processes, gated=gated)
    if unwritten:
        raise ValueError("could not write %s" % "; ".join(unwritten))
    return run
