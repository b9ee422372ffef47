"""Render a run's dossiers (one per host) and its fleet index, as self-contained HTML and as Markdown."""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from .report_health import fleet_columns, health_view
from .report_model import STATE_RANK, HostModel, ProbeEntry, RunModel, load_run
from .report_values import flatten, format_value

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_templates")
FAILED_STATES = ("unreachable", "error", "timeout")


@dataclass(frozen=True)
class ProbeSection:
    """A probe's own summary: templates included before the generic table, and the view they read."""

    html_template: str
    markdown_template: str
    view: Callable[[Any], Dict[str, Any]]


# A probe not listed here renders through the generic "every measurement" table alone.
PROBE_SECTIONS: Dict[str, ProbeSection] = {
    "health": ProbeSection("sections/health.html.j2", "sections/health.md.j2", health_view),
}


class MarkdownText(str):
    """Markdown built by this module (links, code blocks): written out as is, not escaped."""


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|&#])")


def markdown_escape(value: Any) -> str:
    """Text that stays text in Markdown and keeps a table row on one line."""
    if value is None:
        return ""
    if isinstance(value, MarkdownText):
        return value
    text = _MARKDOWN_SPECIAL.sub(r"\\\1", str(value))
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def markdown_code_block(text: str) -> MarkdownText:
    """A fenced block whose fence is longer than any run of backticks inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return MarkdownText("%s\n%s\n%s" % (fence, text, fence))


def markdown_link(text: str, target: str) -> MarkdownText:
    """target must already be URL-quoted (see href)."""
    return MarkdownText("[%s](%s)" % (markdown_escape(text), target))


def cell_text(cell: Any) -> MarkdownText:
    """A summary cell for Markdown, which has no tooltips or colours: the note goes inline, a bad value in bold."""
    text = markdown_escape(cell.text)
    if cell.note and cell.flag in ("na", "warn", "bad"):
        text += " (%s)" % markdown_escape(cell.note)
    return MarkdownText("**%s**" % text if cell.flag == "bad" else text)


def _html_finalize(value: Any) -> Any:
    return "" if value is None else value


def _environment(markdown: bool) -> Environment:
    common = dict(loader=FileSystemLoader(TEMPLATE_DIR), undefined=StrictUndefined,
                  trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    if markdown:
        environment = Environment(autoescape=False, finalize=markdown_escape, **common)
        environment.globals["cell_text"] = cell_text
        return environment
    return Environment(autoescape=select_autoescape(["html", "j2"]), finalize=_html_finalize, **common)


HTML = _environment(markdown=False)
MARKDOWN = _environment(markdown=True)


def href(*parts: str) -> str:
    """A relative link to a file under the run; '%' in host directory names must reach the browser as '%25'."""
    return "/".join(quote(part, safe="") for part in parts)


def _command_text(command: Any) -> str:
    if isinstance(command, list):
        return shlex.join(str(part) for part in command)
    return format_value("command", command) if command is not None else "not recorded"


def _grouped_rows(data: Any) -> List[Tuple[str, list]]:
    groups: Dict[str, list] = {}
    for row in flatten(data):
        groups.setdefault(row.section, []).append(row)
    return list(groups.items())


def probe_view(entry: ProbeEntry, markdown: bool) -> Dict[str, Any]:
    envelope = entry.envelope
    section = PROBE_SECTIONS.get(entry.probe)
    reproducibility = [
        ("run id", format_value("run_id", envelope.get("run_id", "not recorded"))),
        ("collection version", format_value("collection_version", envelope.get("collection_version", "not recorded"))),
        ("schema version", format_value("schema_version", envelope.get("schema_version", "not recorded"))),
        ("probe sha256", format_value("probe_sha256", envelope.get("probe_sha256", "not recorded"))),
        ("host (as the probe saw it)", format_value("host", envelope.get("host", "not recorded"))),
        ("started", format_value("started", envelope.get("started", "not recorded"))),
        ("duration", format_value("duration_s", envelope.get("duration_s", "not recorded"))),
    ]
    command = _command_text(envelope.get("command"))
    return {
        "name": entry.probe,
        "status": entry.status,
        "reason": entry.reason,
        "json_href": href(entry.json_file),
        "json_file": entry.json_file,
        "raw_href": href(entry.raw_file) if entry.raw_file else "",
        "raw_file": entry.raw_file or "",
        "unavailable": entry.unavailable,
        "measurements": _grouped_rows(entry.data),
        "environment": flatten(envelope.get("environment", {})),
        "reproducibility": reproducibility,
        "command": markdown_code_block(command) if markdown else command,
        "section_template": (section.markdown_template if markdown else section.html_template) if section else "",
        "section": section.view(entry.data) if section else {},
    }


def _host_context(host: HostModel, run: RunModel, markdown: bool) -> Dict[str, Any]:
    probes = [probe_view(entry, markdown) for entry in host.probes.values()]
    probes.sort(key=lambda probe: (probe["name"] != "health", probe["name"]))
    return {"host": host, "run": run, "probes": probes, "markdown": markdown,
            "index_href": "../index.md" if markdown else "../index.html",
            "unavailable_total": sum(len(probe["unavailable"]) for probe in probes)}


def render_host_dossier_html(host_model: HostModel, run_model: RunModel) -> str:
    return HTML.get_template("dossier.html.j2").render(**_host_context(host_model, run_model, markdown=False))


def render_host_dossier_markdown(host_model: HostModel, run_model: RunModel) -> str:
    context = _host_context(host_model, run_model, markdown=True)
    context["index_link"] = markdown_link("fleet index", context["index_href"])
    for probe in context["probes"]:
        probe["json_link"] = markdown_link(probe["json_file"], probe["json_href"])
        probe["raw_link"] = markdown_link(probe["raw_file"], probe["raw_href"]) if probe["raw_file"] else ""
    return MARKDOWN.get_template("dossier.md.j2").render(**context)


def host_summary(host: HostModel, markdown: bool) -> Dict[str, Any]:
    health = host.probes.get("health")
    columns = fleet_columns(health.data) if health is not None and isinstance(health.envelope, dict) else \
        {"gpus": "—", "driver": "—", "cuda_init": "not run", "cuda_flag": "na"}
    dossier = href(host.dir_name, "dossier.md" if markdown else "dossier.html")
    summary = dict(columns, host=host, dossier_href=dossier)
    if markdown:
        summary["dossier_link"] = markdown_link(host.name, dossier)
    return summary


def _index_context(run: RunModel, markdown: bool) -> Dict[str, Any]:
    rows = [host_summary(host, markdown) for host in run.hosts_worst_first()]
    groups = []
    for name, hosts in run.groups().items():
        counts: Dict[str, int] = {}
        for host in hosts:
            counts[host.state] = counts.get(host.state, 0) + 1
        groups.append({"name": name, "total": len(hosts),
                       "counts": sorted(counts.items(), key=lambda item: -STATE_RANK.get(item[0], 0)),
                       "not_ok": [host.name for host in hosts if host.state != "ok"]})
    return {"run": run, "rows": rows, "counts": run.counts_by_state(), "groups": groups,
            "failed": [row for row in rows if row["host"].state in FAILED_STATES],
            "versions": ", ".join(run.collection_versions()) or "not recorded"}


def render_fleet_index_html(run_model: RunModel) -> str:
    return HTML.get_template("index.html.j2").render(**_index_context(run_model, markdown=False))


def render_fleet_index_markdown(run_model: RunModel) -> str:
    return MARKDOWN.get_template("index.md.j2").render(**_index_context(run_model, markdown=True))


def _inside(root: str, path: str) -> bool:
    root_real, path_real = os.path.realpath(root), os.path.realpath(path)
    return os.path.commonpath([root_real, path_real]) == root_real and path_real != root_real


def render_run(run_dir: str, expected_hosts: Iterable[str], host_groups: Optional[Mapping[str, Sequence[str]]],
               write: Callable[[str, str], None]) -> RunModel:
    """Render every dossier and the fleet index, write(path, text) each, and return the run as loaded.

    Paths: <run_dir>/<host.dir_name>/dossier.html and .md for every host of the returned run, <run_dir>/index.html and .md.

    Raises ValueError, before writing anything, if a path would resolve outside run_dir (e.g. a linked host directory).
    """
    run = load_run(run_dir, expected_hosts, host_groups)
    outputs = []
    for host in run.hosts:
        host_path = os.path.join(run.run_dir, host.dir_name)
        outputs.append((os.path.join(host_path, "dossier.html"), render_host_dossier_html(host, run)))
        outputs.append((os.path.join(host_path, "dossier.md"), render_host_dossier_markdown(host, run)))
    outputs.append((os.path.join(run.run_dir, "index.html"), render_fleet_index_html(run)))
    outputs.append((os.path.join(run.run_dir, "index.md"), render_fleet_index_markdown(run)))
    for path, unused_text in outputs:
        if not _inside(run.run_dir, path):
            raise ValueError("refusing to write %s: it resolves outside the run directory %s" % (path, run.run_dir))
    for path, text in outputs:
        write(path, text)
    return run
