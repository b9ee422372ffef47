"""Check a run's inputs on the controller before anything runs: each host's variables, the rules, the rule overrides.

Every problem is a sentence that names the variable (and the host) and says what is wrong and what is allowed, so a
wrong type, a value out of range, an unknown profile or probe, or a broken rules file stops the run before a probe
starts, instead of failing half-way or being accepted silently. A probe's parameters are checked against its spec
(plugins/plugin_utils/probes/<name>/params.json, probe_kit/param_spec.py).
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping

from ..module_utils.probe_spec import PROBE_TIMEOUT_LIMIT_S
from ..module_utils.act_spec import DRAINABLE_VERDICTS, SCHEDULERS
from ..module_utils.results_dir import DEFAULT_RESULTS_DIR
from ..module_utils.slurm_node_states import is_node_name
from .judge.rules import value_kind
from .probe_kit import param_spec
from .probe_kit.registry import all_profiles, declarations
from .store.paths import check_run_id
from .rules_and_baselines import load_baselines, load_rules, validate_overrides
from .unjudged_probes import unjudged_probe_problems

HOST_VARIABLES = ("gpufleet_profile", "gpufleet_profiles", "gpufleet_python", "gpufleet_python_candidates",
                  "gpufleet_results_dir", "gpufleet_rule_overrides", "gpufleet_become_probes", "probe_timeouts",
                  "probe_params", "gpufleet_slurm_node_name")
# How the run acts on its verdicts (docs/acting.md), checked before anything runs: a typo must not surface after hours
# of probing, nor act in a way the operator did not ask.
ACT_VARIABLES = ("gpufleet_act", "gpufleet_slurm_host", "gpufleet_slurm_conf", "gpufleet_slurm_sinfo",
                 "gpufleet_slurm_scontrol", "gpufleet_slurm_drain_on",
                 "gpufleet_slurm_max_drain_percent", "gpufleet_slurm_min_drain_nodes", "gpufleet_slurm_intake_reason")
CONTROLLER_VARIABLES = ("gpufleet_run_id", "gpufleet_rules_file", "gpufleet_baselines_dir", "report_rules_file",
                        "report_baselines_dir", "gpufleet_gate") + ACT_VARIABLES
# What Ansible's bool filter reads as true or false; anything else would read as false, and turn the gate off unasked.
GATE_WORDS = ("true", "false", "yes", "no", "on", "off", "1", "0")
CONTROLLER_REPORT_VARIABLES = ("gpufleet_profile", "gpufleet_profiles", "gpufleet_results_dir")


def shown(value) -> str:
    text = repr(value) if not isinstance(value, str) else repr(str(value))
    return text if len(text) <= 80 else text[:77] + "..."


def _per_probe_mapping(name: str, value, probes: list[str]) -> tuple[list[str], dict]:
    if not isinstance(value, Mapping):
        return ["%s must be a mapping of probe name to its setting, e.g. {health: ...}, not %s %s"
                % (name, value_kind(value), shown(value))], {}
    problems = ["%s.%s: no such probe (known probes: %s)" % (name, probe, ", ".join(probes))
                for probe in sorted(value, key=str) if probe not in probes]
    return problems, {probe: setting for probe, setting in value.items() if probe in probes}


def timeout_problems(value, probes: list[str]) -> list[str]:
    problems, known = _per_probe_mapping("probe_timeouts", value, probes)
    for probe in sorted(known):
        seconds = known[probe]
        if isinstance(seconds, bool) or not isinstance(seconds, int):
            problems.append("probe_timeouts.%s must be a whole number of seconds (1 to %d), not %s %s"
                            % (probe, PROBE_TIMEOUT_LIMIT_S, value_kind(seconds), shown(seconds)))
        elif seconds < 1:
            problems.append("probe_timeouts.%s is %d; a time limit must be at least 1 second" % (probe, seconds))
        elif seconds > PROBE_TIMEOUT_LIMIT_S:
            problems.append("probe_timeouts.%s is %d; a time limit may be at most %d seconds (a day)"
                            % (probe, seconds, PROBE_TIMEOUT_LIMIT_S))
    return problems


def params_problems(value, probes: list[str]) -> list[str]:
    """Each probe's parameters against its spec (params.json): an unknown name, naming the known ones; a wrong type or a
    value out of range, with what the parameter allows."""
    problems, known = _per_probe_mapping("probe_params", value, probes)
    for probe in sorted(known):
        if isinstance(known[probe], Mapping):
            problems.extend(param_spec.params_problems(probe, known[probe], "probe_params." + probe))
        else:
            problems.append("probe_params.%s must be a mapping of parameter name to value, not %s %s"
                            % (probe, value_kind(known[probe]), shown(known[probe])))
    return problems


def declared_params_problems() -> list[str]:
    """The parameters each probe's declaration gives in its profiles, against the probe's spec (the collection's own)."""
    return [problem for name, found in sorted(declarations().items()) for profile, given in sorted(found.profiles.items())
            for problem in param_spec.params_problems(name, given, "%s's profile %s" % (name, profile))]


def host_problems(values: Mapping, probes: list[str], rules: dict | None) -> list[str]:
    """Problems of one host's variables (values: the variables it sets among HOST_VARIABLES)."""
    problems = []
    custom = values.get("gpufleet_profiles")
    profiles, profile_problems = all_profiles({} if custom is None else custom)
    problems.extend(profile_problems)
    if "gpufleet_profile" in values:
        profile = values["gpufleet_profile"]
        named_but_broken = isinstance(custom, Mapping) and isinstance(profile, str) and profile in custom
        if not isinstance(profile, str) or (profile not in profiles and not named_but_broken):
            problems.append("gpufleet_profile is %s %s, not a profile (known profiles: %s)"
                            % (value_kind(profile), shown(profile), ", ".join(sorted(profiles))))
    if "gpufleet_python" in values and not isinstance(values["gpufleet_python"], str):
        problems.append("gpufleet_python must be a string, the path of the host's Python (empty: found on the host), "
                        "not %s %s" % (value_kind(values["gpufleet_python"]), shown(values["gpufleet_python"])))
    if "gpufleet_python_candidates" in values:
        candidates = values["gpufleet_python_candidates"]
        if not isinstance(candidates, list) or not all(isinstance(path, str) and path for path in candidates):
            problems.append("gpufleet_python_candidates must be a list of interpreter paths or globs, e.g. "
                            "[/srv/ml/*/bin/python3], not %s %s" % (value_kind(candidates), shown(candidates)))
    if "gpufleet_results_dir" in values:
        directory = values["gpufleet_results_dir"]
        if not isinstance(directory, str) or not directory.strip():
            problems.append("gpufleet_results_dir must be a directory on the controller (default: %s), not %s %s"
                            % (DEFAULT_RESULTS_DIR, "an empty string" if isinstance(directory, str) else value_kind(directory),
                               shown(directory)))
    if "gpufleet_become_probes" in values:
        become = values["gpufleet_become_probes"]
        if not isinstance(become, list) or not all(isinstance(name, str) for name in become):
            problems.append("gpufleet_become_probes must be a list of probe names, e.g. [tuning], not %s %s"
                            % (value_kind(become), shown(become)))
        else:
            unknown = [name for name in become if name not in probes]
            if unknown:
                problems.append("gpufleet_become_probes names unknown probe(s) %s (known probes: %s)"
                                % (", ".join(unknown), ", ".join(probes)))
    if "probe_timeouts" in values:
        problems.extend(timeout_problems(values["probe_timeouts"], probes))
    if "probe_params" in values:
        problems.extend(params_problems(values["probe_params"], probes))
    if "gpufleet_slurm_node_name" in values and not is_node_name(values["gpufleet_slurm_node_name"]):
        problems.append("gpufleet_slurm_node_name must be one Slurm node's name (letters, digits, '.', '_', '-'; no list "
                        "or range), not %s %s" % (value_kind(values["gpufleet_slurm_node_name"]),
                                                  shown(values["gpufleet_slurm_node_name"])))
    overrides = values.get("gpufleet_rule_overrides")
    if overrides is not None and not isinstance(overrides, Mapping):
        problems.append("gpufleet_rule_overrides must be a mapping of rule id to {severity, params, enabled}, not %s %s"
                        % (value_kind(overrides), shown(overrides)))
    elif overrides is not None:
        problems.extend(re.sub(r"\brule_overrides\b", "gpufleet_rule_overrides", problem, count=1)
                        for problem in validate_overrides(values["gpufleet_rule_overrides"], rules))
    return problems


def hosts_problems(pattern, hosts: list, inventory_sources) -> list[str]:
    """The problem of a run that would validate no host: an empty pattern match (no inventory, or a gpufleet_hosts
    naming nothing in it) would otherwise probe nothing and end in a report that finds no results."""
    if hosts:
        return []
    sources = [str(source) for source in inventory_sources] if isinstance(inventory_sources, (list, tuple)) else []
    where = "the inventory (%s)" % ", ".join(sources) if sources else "the inventory"
    return ["no hosts matched gpufleet_hosts %s in %s: give an inventory with -i (e.g. -i fleet.yml) whose hosts "
            "the pattern matches" % (shown(pattern), where)]


def _path(value):
    """None when unset or empty (the collection's own file); a path like the report module's (~ and $VARS expanded)."""
    if not value:
        return None
    return os.path.expanduser(os.path.expandvars(value)) if isinstance(value, str) else value


def _rules_file(values: Mapping) -> tuple[str, object]:
    """(the variable that names the rules file, its path or None for the collection's own)."""
    # The report role's own variable, when set, wins over gpufleet_rules_file (its default).
    variable = "report_rules_file" if values.get("report_rules_file") else "gpufleet_rules_file"
    return variable, _path(values.get(variable))


def _rules(values: Mapping) -> tuple[list[str], dict | None]:
    """The rules the report will judge with, or the problem that stops the run."""
    variable, rules_file = _rules_file(values)
    if rules_file is not None and not isinstance(rules_file, str):
        return ["%s must be the path of a rules file, not %s %s" % (variable, value_kind(rules_file), shown(rules_file))], None
    try:
        return [], load_rules(rules_file)
    except ValueError as exc:
        return ["%s%s" % (variable + ": " if rules_file else "", exc)], None


def _baselines(values: Mapping) -> tuple[list[str], list[str]]:
    """(problems, warnings) of the baselines folder; a broken file in it is a warning, not fatal."""
    variable = "report_baselines_dir" if values.get("report_baselines_dir") else "gpufleet_baselines_dir"
    directory = _path(values.get(variable))
    if directory is not None and not isinstance(directory, str):
        return ["%s must be the path of a folder of baseline files, not %s %s" % (variable, value_kind(directory), shown(directory))], []
    if directory is not None and not os.path.isdir(directory):
        return ["%s %s is not a folder" % (variable, directory)], []
    # The judge reports a broken file too, and compares the hosts of that SKU with their peers only.
    # Each problem names its file by the folder's path already.
    return [], ["%s: %s" % (variable, problem) if directory else problem for problem in load_baselines(directory)[1]]


def unjudged_problems(controller_values: Mapping, host_values: Mapping[str, Mapping], rules: dict) -> list[str]:
    """The probes of a host's profile that the rules in use (controller_values' rules file, loaded as rules) with the
    host's overrides (host_values: {host: its variables}) leave with no enabled rule (unjudged_probes.py)."""
    variable, rules_file = _rules_file(controller_values)
    try:
        shipped = load_rules() if rules_file else rules
    except ValueError as exc:
        return [str(exc)]
    return unjudged_probe_problems(host_values, rules, shipped, variable, rules_file if isinstance(rules_file, str) else None)


def controller_problems(values: Mapping) -> tuple[list[str], list[str], dict | None]:
    """(problems, warnings, rules) of the controller's variables: run id, rules file, baselines folder."""
    problems = []
    if "gpufleet_run_id" in values:
        try:
            check_run_id(values["gpufleet_run_id"] if isinstance(values["gpufleet_run_id"], str) else "")
        except ValueError as exc:
            problems.append("gpufleet_run_id %s: %s" % (shown(values["gpufleet_run_id"]), exc))
    rules_problems, rules = _rules(values)
    baselines_problems, warnings = _baselines(values)
    return problems + gate_problems(values) + act_problems(values) + rules_problems + baselines_problems, warnings, rules


def gate_problems(values: Mapping) -> list[str]:
    """gpufleet_gate must say true or false: a typo must not report only where the gate was meant (issue 44)."""
    gate = values.get("gpufleet_gate", True)
    if isinstance(gate, bool) or (isinstance(gate, str) and gate.strip().lower() in GATE_WORDS):
        return []
    return ["gpufleet_gate must be true (the gate refuses hosts that are not validated, the default) or false (report "
            "only), not %s" % shown(gate)]


def _number(value, kind):
    """A number given as text (-e name=20) as that number; anything else as it is."""
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            return value
    return value


def act_problems(values: Mapping) -> list[str]:
    """Problems of the variables that say how the run acts on its verdicts."""
    problems = []
    if "gpufleet_act" in values and values["gpufleet_act"] not in SCHEDULERS:
        problems.append("gpufleet_act must be one of %s, not %s" % (", ".join(SCHEDULERS), shown(values["gpufleet_act"])))
    for name in ("gpufleet_slurm_host", "gpufleet_slurm_conf", "gpufleet_slurm_sinfo", "gpufleet_slurm_scontrol",
                 "gpufleet_slurm_intake_reason"):
        if name in values and not isinstance(values[name], str):
            problems.append("%s must be a string, not %s %s" % (name, value_kind(values[name]), shown(values[name])))
    if "gpufleet_slurm_intake_reason" in values and isinstance(values["gpufleet_slurm_intake_reason"], str) \
            and values["gpufleet_slurm_intake_reason"].startswith("gpufleet "):
        problems.append("gpufleet_slurm_intake_reason must not start with 'gpufleet ', the prefix of the reasons this "
                        "collection sets itself")
    drain_on = values.get("gpufleet_slurm_drain_on", ["fail"])
    # -e gives text: a comma-separated list, as the module's list option reads it, and numbers as digits.
    words = [word.strip() for word in drain_on.split(",")] if isinstance(drain_on, str) else drain_on
    if not isinstance(words, list) or not words or any(word not in DRAINABLE_VERDICTS for word in words):
        problems.append("gpufleet_slurm_drain_on must be a non-empty list of %s, not %s"
                        % (", ".join(DRAINABLE_VERDICTS), shown(drain_on)))
    percent = _number(values.get("gpufleet_slurm_max_drain_percent", 10), float)
    if isinstance(percent, bool) or not isinstance(percent, (int, float)) or not 0 <= percent <= 100:
        problems.append("gpufleet_slurm_max_drain_percent must be a number from 0 to 100 (the share of the hosts one "
                        "run may drain), not %s %s" % (value_kind(percent), shown(percent)))
    least = _number(values.get("gpufleet_slurm_min_drain_nodes", 1), int)
    if isinstance(least, bool) or not isinstance(least, int) or least < 0:
        problems.append("gpufleet_slurm_min_drain_nodes must be a whole number >= 0, not %s %s" % (value_kind(least), shown(least)))
    return problems
