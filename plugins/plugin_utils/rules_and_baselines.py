# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Load and validate the judge's inputs on the controller: baselines (one YAML per SKU), rules, rule overrides."""
from __future__ import annotations

import copy
import math
import os
import statistics

from .collection_info import collection_root
from .judge.baseline_origin import ORIGIN_KEY, USER_FOLDER_VARIABLE, origin, shown_path
from .judge.check_helpers import params_read
from .judge.datasheet_floors import floor_problems, is_floor, with_floors
from .judge.history_model import HISTORY_PROBE
from .judge.rules import param_kind_problem, rule_list
from .judge.trends import TREND_CHECKS
from .judge.units import to_judged_unit
from .probe_kit.registry import probe_catalogue, rules_files
from .safe_yaml import load_plain_yaml
from .store.schema_paths import path_problem
from .store.schemas import bounded, schema_errors, schema_problems, where_in

BASELINE_SCHEMA = "baseline.schema.json"
RULES_SCHEMA = "rules.schema.json"
OVERRIDES_SCHEMA = "rule_overrides.schema.json"
# The judge's own checks, the settings' titles and the order of the probes' rules; each probe's rules are in its package.
CORE_RULES = os.path.join("rules", "core.yaml")
# The trend checks' rules (judge/trends.py): read after every probe's.
HISTORY_RULES = os.path.join("rules", "history.yaml")
ORDER_KEY = "probe_order"
SHIPPED_RULES = "the collection's rules (%s, each probe's rules.yaml and %s)" % (CORE_RULES, HISTORY_RULES)


def default_baselines_dir() -> str:
    return os.path.join(collection_root(), "baselines")


def rules_sources(order: list) -> list:
    """(probe, path) of every rules file the shipped rules hold after the core's: each probe's in order, then the trend
    checks' (rules/history.yaml)."""
    return rules_files(order) + [(HISTORY_PROBE, os.path.join(collection_root(), HISTORY_RULES))]


def shipped_rules() -> dict:
    """The collection's rules as one document: rules/core.yaml's judge_checks and titles, then the rules of each probe
    (plugin_utils/probes/<probe>/rules.yaml, {"rules": [...]}: that probe's only) in the core's probe_order, then the
    others in the order the probes run, then the trend checks' (rules/history.yaml, probe "history"). docs/rules.yaml is
    this document, written out by tools/rules_list.py."""
    core = load_yaml(os.path.join(collection_root(), CORE_RULES))
    if not isinstance(core, dict):
        raise ValueError("%s must be a mapping (judge_checks, titles, %s)" % (CORE_RULES, ORDER_KEY))
    order = core.get(ORDER_KEY) or []
    if not isinstance(order, list) or not all(isinstance(name, str) for name in order):
        raise ValueError("%s: %s must be a list of probe names" % (CORE_RULES, ORDER_KEY))
    document = {key: value for key, value in core.items() if key != ORDER_KEY}
    document["rules"] = []
    for probe, path in rules_sources(order):
        shown = os.path.relpath(path, collection_root())
        found = load_yaml(path)
        if not isinstance(found, dict) or list(found) != ["rules"] or not isinstance(found["rules"], list):
            raise ValueError("%s must hold one key, rules: the list of the %s probe's rules" % (shown, probe))
        others = [str(rule.get("id")) for rule in found["rules"] if isinstance(rule, dict) and rule.get("probe") != probe]
        if others:
            raise ValueError("%s holds rules of another probe than %s: %s" % (shown, probe, ", ".join(others)))
        document["rules"].extend(found["rules"])
    return document


def _schema(file_name: str, schemas_dir: str | None) -> dict:
    import json  # pylint: disable=import-outside-toplevel
    with open(os.path.join(schemas_dir or os.path.join(collection_root(), "schemas"), file_name), encoding="utf-8") as handle:
        return json.load(handle)


def load_yaml(path: str):
    """Parse one judge input file (no aliases, no duplicate keys, at most 1 MiB); raises ValueError naming the file."""
    return load_plain_yaml(path)


def non_finite_fields(document, prefix: str) -> list[str]:
    """Where a number is NaN or infinite (YAML .nan / .inf): a reference or threshold that compares with nothing."""
    problems = []
    pending = [(prefix, document)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, float) and not math.isfinite(value):
            problems.append("%s is %s; it must be a finite number" % (where, value))
        elif isinstance(value, dict):
            pending.extend(("%s.%s" % (where, key), item) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend(("%s[%d]" % (where, index), item) for index, item in enumerate(value))
    return sorted(problems)


def _yaml_names(directory: str) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith((".yaml", ".yml")))


def _shipped_ids() -> set[str]:
    try:
        return {os.path.splitext(name)[0] for name in _yaml_names(default_baselines_dir())}
    except OSError:
        return set()


def load_baselines(directory: str | None = None, schemas_dir: str | None = None) -> tuple[list[dict], list[str]]:
    """(baselines, problems): every *.yaml / *.yml in directory, each validated against schemas/baseline.schema.json.

    A file that fails to parse or breaks the schema becomes a problem sentence naming the file and the error and
    is skipped; the others load. Its id must equal its file name (without .yaml) and be unique. A user's folder
    (gpufleet_baselines_dir) replaces the collection's baselines/ as a whole; each loaded baseline records where it
    came from (judge/baseline_origin.py), and a user's file is named by its folder wherever it is named.
    A known-good entry of method datasheet_floor is given its value here (judge/datasheet_floors.py).
    """
    directory = directory or default_baselines_dir()
    schema = _schema(BASELINE_SCHEMA, schemas_dir)
    baselines: list[dict] = []
    problems: list[str] = []
    try:
        names = _yaml_names(directory)
    except OSError as exc:
        return [], ["the baselines folder %s cannot be read: %s" % (directory, exc.strerror or exc)]
    shipped = os.path.realpath(directory) == os.path.realpath(default_baselines_dir())
    shipped_ids = set() if shipped else _shipped_ids()
    seen: dict[str, str] = {}
    for name in names:
        path = os.path.join(directory, name)
        shown = shown_path(directory, name, shipped)
        try:
            document = load_yaml(path)
        except ValueError as exc:
            problems.append("%s skipped: %s" % (shown, str(exc).replace(path, shown)))
            continue
        infinite = non_finite_fields(document, "baseline")
        if infinite:
            problems.append("%s skipped: %s" % (shown, "; ".join(infinite)))
            continue
        errors = schema_problems(document, schema, "baseline")
        if errors:
            problems.append("%s skipped: it breaks schemas/%s: %s" % (shown, BASELINE_SCHEMA, "; ".join(errors)))
            continue
        stem = os.path.splitext(name)[0]
        if document["id"] != stem:
            problems.append("%s skipped: its id %r differs from its file name (%s)" % (shown, document["id"], stem))
            continue
        if document["id"] in seen:
            problems.append("%s skipped: id %s is already defined by %s" % (shown, document["id"], seen[document["id"]]))
            continue
        limits = document["match"]["memory_mib"]
        if limits["min"] > limits["max"]:
            problems.append("%s skipped: match.memory_mib min %d is above max %d" % (shown, limits["min"], limits["max"]))
            continue
        unsummarised = _values_off_their_machines(document) + floor_problems(document)
        if unsummarised:
            problems.append("%s skipped: %s" % (shown, "; ".join(unsummarised)))
            continue
        seen[document["id"]] = shown
        loaded = with_floors(in_judged_units(document))
        loaded[ORIGIN_KEY] = origin(directory, name, shipped, document["id"] in shipped_ids)
        baselines.append(loaded)
    return baselines, problems


def replaced_shipped(baselines: list[dict]) -> list[str]:
    """What a user's folder (gpufleet_baselines_dir) did to the collection's baselines, in sentences (none for the
    shipped folder): each of its files that stands in for a shipped SKU id with other content, one sentence for its files
    identical to the shipped ones, and one for the shipped SKUs it lacks (their GPUs then match no baseline)."""
    users = [baseline for baseline in baselines if not (baseline.get(ORIGIN_KEY) or {}).get("shipped", True)]
    if not users:
        return []
    shipped = {baseline["id"]: _without_origin(baseline) for baseline in load_baselines()[0]}
    folder = users[0][ORIGIN_KEY]["folder"]
    sentences, copies = [], []
    for baseline in users:
        found = baseline[ORIGIN_KEY]
        if not found.get("replaces_shipped"):
            continue
        path = shown_path(found["folder"], found["file"], False)
        if _without_origin(baseline) == shipped.get(baseline["id"]):
            copies.append(found["file"])
            continue
        sentences.append("%s (%s) replaces the collection's baselines/%s.yaml and differs from it: hosts of SKU %s are judged "
                         "against its numbers, not the shipped ones" % (path, USER_FOLDER_VARIABLE, baseline["id"], baseline["id"]))
    if copies:
        sentences.append("%s (%s) holds copies of the shipped %s: they replace the collection's files (a later update of "
                         "the collection does not reach them)" % (folder, USER_FOLDER_VARIABLE, ", ".join(sorted(copies))))
    missing = sorted(set(shipped) - {baseline["id"] for baseline in users})
    if missing:
        sentences.append("%s (%s) replaces the collection's baselines/ as a whole: the shipped SKUs %s are not loaded, so "
                         "their GPUs match no baseline" % (folder, USER_FOLDER_VARIABLE, ", ".join(missing)))
    return sentences


def _without_origin(baseline: dict) -> dict:
    return {key: value for key, value in baseline.items() if key != ORIGIN_KEY}


def in_judged_units(document: dict) -> dict:
    """The baseline with every datasheet and known-good number in its quantity's judged unit (judge/units.py), the
    unit it was stated in kept in its source: known_good.x of 4.2579 TB/s is 4257.9 GB/s "(stated as 4.2579 TB/s)".
    The schema has refused every unit outside the closed list before this runs. A datasheet floor has no number yet."""
    converted = copy.deepcopy(document)
    for section in ("datasheet", "known_good"):
        for number in (converted.get(section) or {}).values():
            if is_floor(number):
                continue
            value, unit = to_judged_unit(number["value"], number["unit"])
            if unit == number["unit"]:
                continue
            factor = value / number["value"]
            number["source"] = "%s (stated as %s %s)" % (number["source"], number["value"], number["unit"])
            number["value"], number["unit"] = value, unit
            measured = number.get("measured") or {}
            for series in ("repeats", "machines"):
                if series in measured:
                    measured[series] = [item * factor for item in measured[series]]
    return converted


def _values_off_their_machines(document: dict) -> list[str]:
    """A reference measured on several machines is their median: say where a value is not (a hand-edited number)."""
    problems = []
    for section in ("known_good", "datasheet", "numbers"):
        for key, number in sorted((document.get(section) or {}).items()):
            machines = (number.get("measured") or {}).get("machines")
            if machines and abs(statistics.median(machines) - number["value"]) > 0.05:
                problems.append("%s.%s is %s but the median of its measured.machines %s is %s" % (
                    section, key, number["value"], machines, round(statistics.median(machines), 2)))
    return problems


def load_rules(path: str | None = None, schemas_dir: str | None = None) -> dict:
    """The rules document at path (default: the collection's, shipped_rules()); raises ValueError with a clear message
    when broken."""
    document = load_yaml(path) if path else shipped_rules()
    path = path or SHIPPED_RULES
    infinite = non_finite_fields(document, "rules")
    if infinite:
        raise ValueError("%s: %s" % (path, "; ".join(infinite)))
    if isinstance(document, dict) and document.get("rules") == []:
        # what the schema's minItems refuses, said in words: an empty list would pass every host unchecked
        raise ValueError("%s has no rule (rules: []): a rules file without any judges nothing, so every host would pass "
                         "unchecked; give at least one rule (docs/rules.yaml lists the collection's)" % path)
    errors = rules_schema_problems(document, schemas_dir)
    if errors:
        raise ValueError("%s breaks schemas/%s: %s" % (path, RULES_SCHEMA, "; ".join(errors)))
    problems = rules_reference_problems(document, dict(probe_catalogue().checks, **{HISTORY_PROBE: TREND_CHECKS}))
    problems += [problem for rule in document["rules"] for problem in field_path_problems(rule["id"], rule["probe"], rule.get("params"))]
    if problems:
        raise ValueError("%s: %s" % (path, "; ".join(problems)))
    return document


def rules_schema_problems(document, schemas_dir: str | None = None) -> list[str]:
    """How a rules document breaks schemas/rules.schema.json, the one definition of a rule's shape: a rule's problem
    named by its id and the field ("rule health.x: severity: 'fatal' is not one of ['fail', 'warn']")."""
    rules = rule_list(document) if isinstance(document, dict) and isinstance(document.get("rules"), list) else []
    problems = []
    for where, message in schema_errors(document, _schema(RULES_SCHEMA, schemas_dir)):
        position = where[1] if len(where) > 1 and where[0] == "rules" and isinstance(where[1], int) else None
        rule = rules[position] if position is not None else None
        if isinstance(rule, dict) and isinstance(rule.get("id"), str):
            field = where_in("", where[2:]).lstrip(".")
            problems.append("rule %s: %s%s" % (rule["id"], field + ": " if field else "", message))
        else:
            problems.append("at %s: %s" % (where_in("rules", where), message))
    return bounded(problems)


def rules_reference_problems(document: dict, registries) -> list[str]:
    """What a schema cannot say of a schema-valid rules document: an id defined twice, a check that its probe's
    registry ({probe: {check name: function}}) does not know (a probe without a registry is allowed: the judge reports
    its rules as unmatched), a param that the check reads and the rule lacks (the rule holds every default)."""
    problems = []
    seen = set()
    for rule in document["rules"]:
        if rule["id"] in seen:
            problems.append("rule %s is defined twice" % rule["id"])
        seen.add(rule["id"])
        probe, check = rule["probe"], rule["check"]
        if probe in registries and check not in registries[probe]:
            problems.append("rule %s: check %r is not a %s check (known: %s)" % (
                rule["id"], check, probe, ", ".join(sorted(registries[probe]))))
            continue
        missing = [name for name in params_read(registries.get(probe, {}).get(check)) if name not in (rule.get("params") or {})]
        if missing:
            problems.append("rule %s: params %s missing: the %s check reads %s from its rule (docs/rules.yaml gives "
                            "their defaults)" % (rule["id"], ", ".join(missing), check, "them" if len(missing) > 1 else "it"))
    return problems


def field_path_problems(rule_id: str, probe: str, params) -> list[str]:
    """A rule's params.path (a field of its probe's data, field_equals) that the probe's schema rules out: a typo that
    would match nothing on any host, refused before anything runs."""
    field_path = (params or {}).get("path") if isinstance(params, dict) else None
    if not isinstance(field_path, str):
        return []
    problem = path_problem(probe, field_path)
    return ["rule %s: params.path %r names nothing the %s probe writes: %s" % (rule_id, field_path, probe, problem)] if problem else []


def validate_overrides(overrides, rules: dict | None = None, schemas_dir: str | None = None) -> list[str]:
    """Problem sentences of an inventory's rule overrides (empty when sound).

    Checked against schemas/rule_overrides.schema.json and, when rules are given, against them: every rule id must
    exist and every param must be one the rule declares.
    """
    if overrides is None:
        return []
    infinite = non_finite_fields(overrides, "rule_overrides")
    if infinite:
        return infinite
    problems = schema_problems(overrides, _schema(OVERRIDES_SCHEMA, schemas_dir), "rule_overrides")
    if problems or rules is None:
        return problems
    by_id = {rule["id"]: rule for rule in rules.get("rules", [])}
    for rule_id, change in sorted(overrides.items()):
        rule = by_id.get(rule_id)
        if rule is None:
            problems.append("rule_overrides.%s: no such rule (known: %s)" % (rule_id, ", ".join(sorted(by_id))))
            continue
        defaults = rule.get("params") or {}
        for name in sorted(change.get("params") or {}):
            if name not in defaults:
                problems.append("rule_overrides.%s.params.%s: the rule has no such param (it takes: %s)" % (
                    rule_id, name, ", ".join(sorted(defaults)) or "no params"))
                continue
            mistyped = param_kind_problem(name, defaults[name], change["params"][name])
            if mistyped:
                problems.append("rule_overrides.%s.params.%s: %s" % (rule_id, name, mistyped))
            elif name == "path":
                problems.extend("rule_overrides.%s.%s" % (rule_id, problem.split(": ", 1)[1])
                                for problem in field_path_problems(rule_id, rule["probe"], change["params"]))
    return problems
