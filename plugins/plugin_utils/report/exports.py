"""Machine-readable outputs of a judged run: fleet.json, JUnit XML, a Prometheus textfile. Pure: stdlib and the judge's model."""
from __future__ import annotations

import calendar
import json
import math
import re
import time
import xml.etree.ElementTree as ET
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from ..judge.model import GATING_VERDICTS, VERDICTS, Check, FleetJudgement, HostVerdict, blocks_gate
from ..control_chars import INVISIBLE_CHARACTERS, escape_control
from .number_format import format_quantity
from ..result_fields import iso_seconds
from ..store.paths import DOSSIER_HTML_FILE, DOSSIER_MD_FILE, INDEX_HTML_FILE, INDEX_MD_FILE, JUNIT_FILE, PROMETHEUS_FILE, host_dir_name
from ..unmatched_kinds import MATCHED_NOTHING, RUN_WARNING, RunReach, kind_of, of_kind, run_reach

FLEET_SCHEMA_VERSION = "1"
STATUS_VALUES = {"pass": 0, "warn": 1, "fail": 2, "error": 3, "skip": -1}
STATUS_SEVERITY = {"skip": 0, "pass": 1, "warn": 2, "fail": 4, "error": 3}
UNMATCHED_SUITE = "(rules that matched nothing)"
RUN_WARNINGS_SUITE = "(run warnings)"
REACHABLE_CASE = "host.reachable"
VERDICT_CASE = "host.verdict"
# Characters XML 1.0 cannot hold at all, escaped or not, beside the control characters (written as \xNN before).
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# json.dumps escapes C0 in strings but writes DEL, C1 and the invisible characters as they are; as \uXXXX the file
# holds no control byte and shows where an invisible character is, and still reads back as the same string.
_JSON_RAW_CONTROL = re.compile("[\x7f-\x9f%s]" % INVISIBLE_CHARACTERS)
_RUN_ID_TIME = re.compile(r"^(\d{8}T\d{6}Z)")


# ---------------------------------------------------------------- fleet.json

def json_safe(value: Any) -> Any:
    """value as strict JSON: non-finite floats become "NaN" / "Infinity" / "-Infinity", tuples lists, other objects text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [json_safe(item) for item in items]
    return str(value)


def counts_by_verdict(judgement: FleetJudgement) -> Dict[str, int]:
    counts = {verdict: 0 for verdict in VERDICTS}
    for verdict in judgement.hosts.values():
        counts[verdict.verdict] = counts.get(verdict.verdict, 0) + 1
    return counts


def _dir_names(run_model: Any) -> Dict[str, str]:
    return {host.name: host.dir_name for host in getattr(run_model, "hosts", ())}


def _host_entry(verdict: HostVerdict, dir_name: str) -> Dict[str, Any]:
    return {
        "verdict": verdict.verdict, "reasons": list(verdict.reasons), "sku": verdict.sku, "sku_reason": verdict.sku_reason,
        "groups": list(verdict.groups), "refused_by_gate": blocks_gate(verdict),
        "proven": [proof.to_dict() for proof in verdict.proofs_in("proven")],
        "not_proven": [proof.to_dict() for proof in verdict.proofs_in("not_proven")],
        "not_promised": [proof.to_dict() for proof in verdict.proofs_in("not_promised")],
        "dossier": {"html": dir_name + "/" + DOSSIER_HTML_FILE, "markdown": dir_name + "/" + DOSSIER_MD_FILE},
        "checks": [json_safe(check.to_dict()) for check in verdict.checks],
        "metrics": json_safe(verdict.metrics), "settings": json_safe(verdict.settings),
        "measured_verdict": verdict.measured_verdict or verdict.verdict, "lowest_of_group": list(verdict.lowest_of_group),
    }


def _unmatched_entries(judgement: FleetJudgement, reach: RunReach) -> List[Dict[str, Any]]:
    """Every entry of the judgement's unmatched_rules, each with its kind (unmatched_kinds.py): whether the profile ran
    its probe, or it is a warning about the run and no rule."""
    return [dict(json_safe(check.to_dict()), kind=kind_of(check, reach)) for check in judgement.unmatched_rules]


def _fleet_json_without_hosts(judgement: FleetJudgement, run_model: Any) -> Dict[str, Any]:
    """fleet.json with "hosts" empty, in the document's key order."""
    counts = counts_by_verdict(judgement)
    return {
        "schema_version": FLEET_SCHEMA_VERSION,
        "run_id": judgement.run_id,
        "previous_run_id": judgement.previous_run_id,
        "collection_versions": list(run_model.collection_versions()) if hasattr(run_model, "collection_versions") else [],
        "counts": counts,
        "gate": {"enforced": judgement.gate_enforced,
                 "passed": not any(blocks_gate(verdict) for verdict in judgement.hosts.values()),
                 "gating_verdicts": list(GATING_VERDICTS),
                 "gating_hosts": sorted(name for name, verdict in judgement.hosts.items() if blocks_gate(verdict))},
        "hosts_worst_first": [verdict.host for verdict in judgement.hosts_worst_first()],
        "hosts": {},
        "unmatched_rules": _unmatched_entries(judgement, run_reach(run_model)),
        "fleet_statistics": json_safe(judgement.fleet_statistics),
        "setting_minorities": json_safe(judgement.setting_minorities),
        "slow_probes": json_safe(judgement.slow_probes),
        "weakened_rules": json_safe(judgement.weakened_rules),
        "files": {"index_html": INDEX_HTML_FILE, "index_markdown": INDEX_MD_FILE, "junit": JUNIT_FILE, "prometheus": PROMETHEUS_FILE},
    }


def _host_entries(judgement: FleetJudgement, run_model: Any) -> Iterator[Tuple[str, Dict[str, Any]]]:
    dir_names = _dir_names(run_model)
    for name, verdict in sorted(judgement.hosts.items()):
        yield name, _host_entry(verdict, dir_names.get(name) or host_dir_name(name))


def fleet_json(judgement: FleetJudgement, run_model: Any) -> Dict[str, Any]:
    """The run's verdicts for machines; shape in schemas/fleet.schema.json. Dossier paths are relative to the run directory."""
    document = _fleet_json_without_hosts(judgement, run_model)
    document["hosts"] = dict(_host_entries(judgement, run_model))
    return document


def export_json_text(document: Any) -> str:
    """A small JSON export a person or a script may open (a host's outcome, the record of acting in Slurm): indented,
    keys sorted, and no raw control or invisible character, as in fleet.json; reads back as the same document."""
    try:
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON's own \uXXXX escape keeps it exactly
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=True, allow_nan=False)
    return _JSON_RAW_CONTROL.sub(lambda match: json.dumps(match.group())[1:-1], text) + "\n"


def _compact_json(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if text.isascii() and "\x7f" not in text:  # nothing _JSON_RAW_CONTROL matches: its one ASCII character is DEL
        return text
    return _JSON_RAW_CONTROL.sub(lambda match: json.dumps(match.group())[1:-1], text)


def fleet_json_chunks(judgement: FleetJudgement, run_model: Any) -> Iterator[str]:
    """fleet.json as written, a host at a time (the checks of 10,000 hosts would be gigabytes as one document): strict
    JSON, one line, no raw control byte; the same text as json.dumps of fleet_json, compact."""
    yield "{"
    for position, (key, value) in enumerate(_fleet_json_without_hosts(judgement, run_model).items()):
        yield ("," if position else "") + _compact_json(key) + ":"
        if key != "hosts":
            yield _compact_json(value)
            continue
        yield "{"
        for number, (name, entry) in enumerate(_host_entries(judgement, run_model)):
            yield ("," if number else "") + _compact_json(name) + ":" + _compact_json(entry)
        yield "}"
    yield "}\n"


def fleet_json_text(judgement: FleetJudgement, run_model: Any) -> str:
    """fleet.json as written: strict JSON, one line, no raw control byte."""
    return "".join(fleet_json_chunks(judgement, run_model))


# ---------------------------------------------------------------- JUnit XML

def xml_text(value: Any) -> str:
    """Text XML can hold: control characters as \\xNN, others XML 1.0 forbids U+FFFD (ElementTree escapes the rest)."""
    return _XML_INVALID.sub("\ufffd", escape_control("" if value is None else str(value), keep="\t\n\r"))


def junit_case_name(check: Check) -> str:
    return check.id + (" gpu%s" % check.gpu_index if check.gpu_index is not None else "") + (" %s" % check.device if check.device else "")


def _quantity(value: Any, unit: str) -> str:
    """A check's value or reference for people: a number's digits chosen (number_format.py), anything else as it is."""
    if _is_number(value):
        return format_quantity(value, unit)
    return ("%s %s" % (value, unit)).rstrip()


def _details(check: Check) -> str:
    """The text of a JUnit failure, error or warning: the reason, then the value and reference as people read them
    (fleet.json and the Prometheus file keep every digit)."""
    parts = ["check %s (probe %s): %s" % (check.id, check.probe or "none", check.status), check.reason]
    if check.gpu_uuid or check.gpu_index is not None:
        parts.append("GPU %s %s" % ("" if check.gpu_index is None else check.gpu_index, check.gpu_uuid or ""))
    if check.device:
        parts.append("device: %s" % check.device)
    if check.value is not None:
        parts.append("value: %s" % _quantity(check.value, check.unit))
    if check.reference is not None:
        parts.append("reference: %s (%s)" % (_quantity(check.reference, check.unit), check.reference_source or "source not given"))
    if check.threshold:
        parts.append("threshold: %s" % check.threshold)
    return "\n".join(part.rstrip() for part in parts)


def _testcase(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", {"classname": xml_text(classname), "name": xml_text(name), "time": "0"})


def _add_check(suite: ET.Element, classname: str, check: Check) -> str:
    """The check as a testcase; returns the JUnit outcome it counts as: passed, failures, errors or skipped."""
    case = _testcase(suite, classname, junit_case_name(check))
    if check.status == "fail":
        ET.SubElement(case, "failure", {"message": xml_text(check.reason), "type": "fail"}).text = xml_text(_details(check))
        return "failures"
    if check.status == "skip":
        ET.SubElement(case, "skipped", {"message": xml_text(check.reason)})
        return "skipped"
    if check.status == "warn":
        properties = ET.SubElement(case, "properties")
        ET.SubElement(properties, "property", {"name": "status", "value": "warn"})
        ET.SubElement(case, "system-out").text = xml_text("WARN: " + _details(check))
        return "passed"
    if check.status == "pass":
        return "passed"
    # error, and any status the model does not know
    ET.SubElement(case, "error", {"message": xml_text(check.reason), "type": xml_text(check.status)}).text = \
        xml_text(_details(check))
    return "errors"


def _suite(parent: ET.Element, name: str, properties: List[Tuple[str, str]]) -> ET.Element:
    suite = ET.SubElement(parent, "testsuite", {"name": xml_text(name)})
    if properties:
        holder = ET.SubElement(suite, "properties")
        for key, value in properties:
            ET.SubElement(holder, "property", {"name": key, "value": xml_text(value)})
    return suite


def _verdict_case(suite: ET.Element, classname: str, verdict: HostVerdict, gated: bool) -> str:
    """The host.verdict testcase of a host the gate refuses without a failing check (a judge's verdict, or a warn host
    where no GPU was measured); returns its JUnit outcome. A fail, error, unreachable or not_validated host fails it
    always; a warn host fails it only when the run enforces its gate (the play exits 2), and otherwise passes with the
    reason in system-out, as the run passes it."""
    case = _testcase(suite, classname, VERDICT_CASE)
    reason = "; ".join(verdict.reasons) or "the judge's verdict is %s" % verdict.verdict
    if verdict.verdict in GATING_VERDICTS or gated:
        tag = "error" if verdict.verdict in ("error", "unreachable") else "failure"
        ET.SubElement(case, tag, {"message": xml_text(reason), "type": verdict.verdict}).text = xml_text(reason)
        return "failures" if tag == "failure" else "errors"
    properties = ET.SubElement(case, "properties")
    ET.SubElement(properties, "property", {"name": "status", "value": verdict.verdict})
    ET.SubElement(properties, "property", {"name": "gate", "value": "refused"})
    ET.SubElement(case, "system-out").text = xml_text(
        "%s: the gate would refuse this host (this run reports only: gpufleet_gate is false): %s" % (verdict.verdict.upper(), reason))
    return "passed"


def _host_suite(parent: ET.Element, verdict: HostVerdict, gated: bool) -> Dict[str, int]:
    suite = _suite(parent, verdict.host, [("verdict", verdict.verdict), ("sku", verdict.sku or "unknown"),
                                          ("sku_reason", verdict.sku_reason), ("groups", ", ".join(verdict.groups))])
    classname = "gpufleet." + verdict.host
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    outcomes = []
    if verdict.verdict == "unreachable" and not any(check.id == REACHABLE_CASE for check in verdict.checks):
        case = _testcase(suite, classname, REACHABLE_CASE)
        reason = "; ".join(verdict.reasons) or "the host could not be reached"
        ET.SubElement(case, "error", {"message": xml_text(reason), "type": "unreachable"}).text = xml_text(reason)
        outcomes.append("errors")
    outcomes.extend(_add_check(suite, classname, check) for check in verdict.checks)
    if blocks_gate(verdict) and not any(outcome in ("failures", "errors") for outcome in outcomes):
        outcomes.append(_verdict_case(suite, classname, verdict, gated))
    for outcome in outcomes:
        totals["tests"] += 1
        if outcome != "passed":
            totals[outcome] += 1
    _set_totals(suite, totals)
    return totals


def _set_totals(element: ET.Element, totals: Dict[str, int]) -> None:
    for key in ("tests", "failures", "errors", "skipped"):
        element.set(key, str(totals[key]))
    element.set("time", "0")


_SUITE_PLACE = "gpufleet-suites-go-here"
# The suites after the hosts': (name, classname, the kind of unmatched_rules entry each holds).
_RUN_SUITES = ((UNMATCHED_SUITE, "gpufleet.rules", MATCHED_NOTHING), (RUN_WARNINGS_SUITE, "gpufleet.run", RUN_WARNING))


def junit_chunks(judgement: FleetJudgement, gated: bool = True, run_model: Any = None) -> Iterator[str]:
    """One <testsuite> per host (hosts by name), one <testcase> per check; totals on every suite and on <testsuites>.
    Then a suite of the rules that matched nothing although the profile runs their probe, and one of the warnings
    about the run itself (unmatched_kinds.py): a rule of a probe the profile does not run, or that measured on no host,
    is no test case.

    gated: whether the run enforces its gate (gpufleet_gate): a warn host that the gate refuses
    (blocks_gate) is then a failure, as the play fails on it; otherwise it passes, its reason in system-out.
    run_model: the stored run, whose hosts' inputs name the profile (None: no profile known, so every rule whose probe
    gave no data is taken as not run).

    Each suite is built and written out as text on its own (the element tree of 10,000 hosts' checks would take
    gigabytes): the same text as indenting and writing the whole tree at once."""
    suites: List[str] = []
    grand = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def add(build: Callable[[ET.Element], Dict[str, int]]) -> None:
        holder = ET.Element("testsuites")
        for key, count in build(holder).items():
            grand[key] += count
        ET.indent(holder[0], level=1)
        suites.append(ET.tostring(holder[0], encoding="unicode"))

    for unused_name, verdict in sorted(judgement.hosts.items()):
        add(lambda holder, verdict=verdict: _host_suite(holder, verdict, gated))
    reach = run_reach(run_model)
    for suite_name, classname, kind in _RUN_SUITES:
        checks = of_kind(judgement.unmatched_rules, reach, kind)
        if checks:
            add(lambda holder, name=suite_name, classname=classname, checks=checks: _checks_suite(holder, name, classname, checks))
    root = ET.Element("testsuites", {"name": xml_text("gpufleet.validation run %s" % judgement.run_id)})
    _set_totals(root, grand)
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    if not suites:
        yield ET.tostring(root, encoding="unicode") + "\n"
        return
    ET.SubElement(root, _SUITE_PLACE)
    head, tail = ET.tostring(root, encoding="unicode").split("<%s />" % _SUITE_PLACE)
    yield head
    for suite in suites:
        yield "\n  " + suite
    yield "\n" + tail + "\n"


def _checks_suite(parent: ET.Element, name: str, classname: str, checks: List[Check]) -> Dict[str, int]:
    suite = _suite(parent, name, [])
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for check in checks:
        outcome = _add_check(suite, classname, check)
        totals["tests"] += 1
        if outcome != "passed":
            totals[outcome] += 1
    _set_totals(suite, totals)
    return totals


def junit_xml(judgement: FleetJudgement, gated: bool = True, run_model: Any = None) -> str:
    """junit_chunks as one text."""
    return "".join(junit_chunks(judgement, gated, run_model))


# ---------------------------------------------------------------- Prometheus textfile

def label_value(value: Any) -> str:
    """A label value escaped per the text exposition format (backslash, double quote, line feed); controls as \\xNN."""
    return escape_control(str(value), keep="\n").replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _help_text(text: str) -> str:
    return escape_control(text, keep="\n").replace("\\", "\\\\").replace("\n", "\\n")


def sample_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    return repr(number)


def _sample(name: str, labels: List[Tuple[str, Any]], value: Any) -> str:
    if not labels:
        return "%s %s" % (name, sample_value(value))
    text = ",".join('%s="%s"' % (key, label_value(item)) for key, item in labels)
    return "%s{%s} %s" % (name, text, sample_value(value))


def _gpu_series_label(check: Check) -> str:
    return "" if check.gpu_index is None else str(check.gpu_index)


def _device_labels(device: str) -> List[Tuple[str, str]]:
    """The device label of a check of a device that is not a GPU (a port: device="mlx5_0/1"); none for the others."""
    return [("device", device)] if device else []


def _host_series(name: str, verdict: HostVerdict) -> List[Tuple[Tuple[str, str, str, str], Check]]:
    """One check per (host, check id, gpu, device), the most severe where several share those labels (the exposition
    allows one), in label order."""
    chosen: Dict[Tuple[str, str, str, str], Check] = {}
    for check in verdict.checks:
        key = (name, check.id, _gpu_series_label(check), check.device or "")
        held = chosen.get(key)
        if held is None or STATUS_SEVERITY.get(check.status, 3) > STATUS_SEVERITY.get(held.status, 3):
            chosen[key] = check
    return sorted(chosen.items())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _family_lines(name: str, help_text: str, samples: Iterable[str]) -> Iterator[str]:
    yield "# HELP %s %s\n" % (name, _help_text(help_text))
    yield "# TYPE %s gauge\n" % name
    for sample in samples:
        yield sample + "\n"


UNMATCHED_RULES_HELP = ("Rules of probes the run's profile runs that matched no result on any host (fleet.json unmatched_rules of kind "
                        "matched_nothing); rules of probes the profile does not run, or that measured on no host, are not counted.")
RUN_WARNINGS_HELP = "Warnings about the run itself, by check: baselines.load, baselines.replaced, store.run_order (no rules)."


def prometheus_chunks(judgement: FleetJudgement, run_model: Any, timestamp_s: float) -> Iterator[str]:
    """node_exporter textfile collector format: every family a gauge, HELP and TYPE first, no sample timestamps; a
    line at a time (a fleet of 10,000 hosts has millions of samples), hosts in name order."""
    versions = list(run_model.collection_versions()) if hasattr(run_model, "collection_versions") else []
    hosts = sorted(judgement.hosts.items())
    yield from _family_lines("gpufleet_run_info", "The run these metrics come from (always 1).",
                             [_sample("gpufleet_run_info", [("run_id", judgement.run_id),
                                                            ("previous_run_id", judgement.previous_run_id or ""),
                                                            ("collection_version", ",".join(versions))], 1)])
    yield from _family_lines("gpufleet_run_timestamp_seconds", "When the run started, in seconds since the Unix epoch.",
                             [_sample("gpufleet_run_timestamp_seconds", [], float(timestamp_s))])
    counts = counts_by_verdict(judgement)
    yield from _family_lines("gpufleet_hosts", "Hosts by verdict in this run.",
                             [_sample("gpufleet_hosts", [("verdict", verdict)], counts.get(verdict, 0)) for verdict in VERDICTS])
    yield from _family_lines("gpufleet_host_verdict", "The host's verdict: 1 for its verdict, 0 for the others.",
                             (_sample("gpufleet_host_verdict", [("host", name), ("verdict", candidate)],
                                      1 if verdict.verdict == candidate else 0)
                              for name, verdict in hosts for candidate in VERDICTS))
    yield from _family_lines("gpufleet_check_status", "Check status: 0 pass, 1 warn, 2 fail, 3 error, -1 skip.",
                             (_sample("gpufleet_check_status", [("host", host), ("check", check_id), ("gpu", gpu)] + _device_labels(device),
                                      STATUS_VALUES.get(check.status, 3))
                              for name, verdict in hosts for (host, check_id, gpu, device), check in _host_series(name, verdict)))
    yield from _family_lines("gpufleet_check_value", "The value a check measured, in the unit of its unit label.",
                             (_sample("gpufleet_check_value", [("host", host), ("check", check_id), ("gpu", gpu)] + _device_labels(device) +
                                      [("unit", check.unit)], check.value)
                              for name, verdict in hosts for (host, check_id, gpu, device), check in _host_series(name, verdict)
                              if _is_number(check.value)))
    reach = run_reach(run_model)
    yield from _family_lines("gpufleet_unmatched_rules", UNMATCHED_RULES_HELP,
                             [_sample("gpufleet_unmatched_rules", [], len(of_kind(judgement.unmatched_rules, reach, MATCHED_NOTHING)))])
    warnings: Dict[str, int] = {}
    for check in of_kind(judgement.unmatched_rules, reach, RUN_WARNING):
        warnings[check.id] = warnings.get(check.id, 0) + 1
    yield from _family_lines("gpufleet_run_warnings", RUN_WARNINGS_HELP,
                             [_sample("gpufleet_run_warnings", [("check", check_id)], count) for check_id, count in sorted(warnings.items())])


def prometheus_text(judgement: FleetJudgement, run_model: Any, timestamp_s: float) -> str:
    """prometheus_chunks as one text."""
    return "".join(prometheus_chunks(judgement, run_model, timestamp_s))


def run_timestamp(run_model: Any, default: Optional[float] = None) -> float:
    """When the run started: from a run id that begins YYYYMMDDTHHMMSSZ, else the earliest probe start, else now."""
    match = _RUN_ID_TIME.match(str(getattr(run_model, "run_id", "")))
    if match:
        try:
            return float(calendar.timegm(time.strptime(match.group(1), "%Y%m%dT%H%M%SZ")))
        except ValueError:
            pass
    starts = []
    for host in getattr(run_model, "hosts", ()):
        for entry in host.probes.values():
            parsed = iso_seconds(entry.started)
            if parsed is not None:
                starts.append(parsed)
    if starts:
        return min(starts)
    return time.time() if default is None else default
