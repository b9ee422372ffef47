"""A host's pages: the dossier and the measurements page (every value of every probe result), in HTML and Markdown,
and the probe views they are built from."""
from __future__ import annotations

import re
import shlex
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple
from urllib.parse import quote

from jinja2 import Environment

from ..judge.model import FleetJudgement, HostVerdict
from ..probe_kit.declaration import ProbeSection
from ..probe_kit.registry import probe_catalogue, sections
from ..store.paths import DOSSIER_FILES, MEASUREMENTS_FILES, MEASUREMENTS_MD_FILE
from ..store.stored_run import HostModel, ProbeEntry, RunModel
from . import notes as report_notes
from .history_plots import history_plots_view
from .markup import HTML, MARKDOWN, href, markdown_code_block, markdown_link
from .python_view import python_view
from .rerun import rerun_command
from .values import flatten, format_value
from .verdicts import measurement_references, verdict_view

# {probe: its own summary}, from the probes' declarations; a probe without one renders through the generic table alone.
PROBE_SECTIONS: Dict[str, ProbeSection] = sections()


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
            "history": {} if markdown else history_plots_view(host, run, judgement),
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
