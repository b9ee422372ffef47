"""Each contract has one owner and the rest derive from it (issue 33): the envelope's statuses, the store's file names,
the report's file names, the default results directory. Where a copy has to exist (the JSON Schema's enum, the probes'
own statuses on hosts without the collection, the YAML Ansible reads without running Python), it is pinned here to the
owner; elsewhere a copy written out again is found and named."""
import ast
import glob
import json
import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.module_utils import envelope_statuses
from ansible_collections.gpufleet.validation.plugins.module_utils.results_dir import DEFAULT_RESULTS_DIR
from ansible_collections.gpufleet.validation.plugins.plugin_utils import unmatched_kinds
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge import rules, weakened_rules
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import paths
from probelib import statuses as host_statuses

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS_ROLES = {"probe": "probe_results_dir", "report": "report_results_dir", "collective_hosts": "collective_hosts_results_dir",
                 "act": "act_results_dir"}
RESULTS_MODULES = ("probe", "report", "open_run", "act", "calibrate_baseline")


def _python_files(*folders):
    for folder in folders:
        yield from sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True))


def _shown(path):
    return os.path.relpath(path, ROOT)


def _tree(path):
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), path)


def _string_collections(tree):
    """Every tuple, list or set literal of two or more strings, and every dict literal whose keys are such strings."""
    for node in ast.walk(tree):
        items = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else None
        if items and len(items) >= 2 and all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in items):
            yield node.lineno, [item.value for item in items]


def _envelope_schema():
    with open(os.path.join(ROOT, "schemas", "envelope.schema.json"), encoding="utf-8") as handle:
        return json.load(handle)


def test_the_envelope_schemas_status_enums_are_the_owners():
    schema = _envelope_schema()
    assert tuple(schema["properties"]["status"]["enum"]) == envelope_statuses.ENVELOPE_STATUSES
    by_reason = {json.dumps(rule["then"]["properties"]["reason"]): rule["if"]["properties"]["status"] for rule in schema["allOf"]}
    assert by_reason == {'{"maxLength": 0}': {"const": "ok"},
                         '{"minLength": 1}': {"enum": [status for status in envelope_statuses.ENVELOPE_STATUSES if status != "ok"]}}


def test_the_hosts_statuses_are_the_controllers():
    assert host_statuses.STATUSES == envelope_statuses.PROBE_STATUSES


def test_every_status_has_a_rank_and_the_failed_and_measured_ones_are_statuses():
    assert sorted(envelope_statuses.STATUS_RANK) == sorted(envelope_statuses.ENVELOPE_STATUSES)
    assert set(envelope_statuses.FAILED_STATUSES) <= set(envelope_statuses.ENVELOPE_STATUSES)
    assert set(envelope_statuses.MEASURED_STATUSES) <= set(envelope_statuses.PROBE_STATUSES)


@pytest.mark.parametrize("side, folders, owner", [
    ("controller", ("plugins",), os.path.join("plugins", "module_utils", "envelope_statuses.py")),
    ("host", ("probes",), os.path.join("probes", "probelib", "statuses.py")),
])
def test_no_other_file_writes_the_statuses_out_again(side, folders, owner):
    """A literal of the same statuses as one of the owner's sets is a copy; a set of its own (causes.py's statuses a
    GPU stack's failure may explain) is a choice, not a copy."""
    owned = [set(statuses) for statuses in (envelope_statuses.ENVELOPE_STATUSES, envelope_statuses.PROBE_STATUSES,
                                            envelope_statuses.MEASURED_STATUSES, envelope_statuses.FAILED_STATUSES)]
    copies = ["%s:%d %s" % (_shown(path), line, values) for path in _python_files(*folders) if _shown(path) != owner
              for line, values in _string_collections(_tree(path)) if set(values) in owned]
    assert copies == [], "the %s's statuses are defined in %s only" % (side, owner)


def _constants(path):
    return [(node.lineno, node.value) for node in ast.walk(_tree(path)) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_only_the_stores_paths_name_a_probes_files():
    owner = os.path.join("plugins", "plugin_utils", "store", "paths.py")
    suffixes = {paths.RESULT_SUFFIX, paths.RAW_SUFFIX}
    copies = ["%s:%d %r" % (_shown(path), line, value) for path in _python_files("plugins/plugin_utils", "plugins/action")
              if _shown(path) != owner for line, value in _constants(path) if value in suffixes]
    assert copies == []
    assert paths.result_file_name("membw") == "membw.json" and paths.result_file_probe("membw.json") == "membw"
    assert paths.raw_file_name("membw") == "membw.raw"
    assert paths.result_file_probe("writer.txt") is None and paths.result_file_probe("Bad.json") is None


def test_only_the_stores_paths_name_the_report_files():
    owner = os.path.join("plugins", "plugin_utils", "store", "paths.py")
    names = set(paths.RUN_LEVEL_NAMES + paths.HOST_REPORT_FILES)
    copies = ["%s:%d %r" % (_shown(path), line, value) for path in _python_files("plugins")
              if _shown(path) != owner for line, value in _constants(path) if value in names]
    assert copies == []


def test_the_report_templates_link_only_files_the_report_writes():
    linked = set()
    templates = glob.glob(os.path.join(ROOT, "plugins", "plugin_utils", "report", "templates", "**", "*.j2"), recursive=True)
    templates += glob.glob(os.path.join(ROOT, "plugins", "plugin_utils", "probes", "*", "templates", "*.j2"))
    for path in templates:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        linked.update(re.findall(r'href="([a-z_]+\.[a-z]+)"', text))
        linked.update(re.findall(r"\]\(([a-z_]+\.[a-z]+)\)", text))
    assert linked and linked <= set(paths.RUN_LEVEL_NAMES + paths.HOST_REPORT_FILES), linked


def _load_yaml(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _assigned_yaml(path, variable):
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Assign) and [getattr(target, "id", None) for target in node.targets] == [variable]:
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no %s" % (path, variable))


def _documentation(module):
    """The module's DOCUMENTATION with the options of this collection's doc fragments it extends merged in, as Ansible
    merges them (the module's own win)."""
    documentation = _assigned_yaml(os.path.join(ROOT, "plugins", "modules", module + ".py"), "DOCUMENTATION")
    options = {}
    for fragment in documentation.get("extends_documentation_fragment", []):
        file_name, _dot, variable = fragment[len("gpufleet.validation."):].partition(".")
        path = os.path.join(ROOT, "plugins", "doc_fragments", file_name + ".py")
        options.update(_assigned_yaml(path, variable.upper() or "DOCUMENTATION").get("options", {}))
    options.update(documentation.get("options", {}))
    documentation["options"] = options
    return documentation


@pytest.mark.parametrize("role, variable", sorted(RESULTS_ROLES.items()))
def test_each_roles_default_results_dir_is_the_owners(role, variable):
    assert _load_yaml("roles", role, "defaults", "main.yml")[variable] == "{{ gpufleet_results_dir | default('%s') }}" % DEFAULT_RESULTS_DIR
    options = _load_yaml("roles", role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert options[variable]["default"] == DEFAULT_RESULTS_DIR


@pytest.mark.parametrize("module", RESULTS_MODULES)
def test_each_modules_documented_results_dir_is_the_owners(module):
    assert _documentation(module)["options"]["results_dir"]["default"] == DEFAULT_RESULTS_DIR


def test_no_playbook_or_plugin_states_the_default_results_dir_again():
    """The playbooks leave it to the roles' defaults and the modules' argument specs (default(omit))."""
    spelled = re.compile(r"""default\(\s*['"]%s['"]\s*\)|default\s*=\s*['"]%s['"]""" % (DEFAULT_RESULTS_DIR, DEFAULT_RESULTS_DIR))
    pinned = {os.path.join("roles", role, "defaults", "main.yml") for role in RESULTS_ROLES}
    found = []
    for pattern in ("playbooks/*.yml", "roles/*/*/*.yml", "plugins/**/*.py", "validate.yml", "docs/*.md", "README.md"):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            with open(path, encoding="utf-8") as handle:
                found.extend("%s:%d" % (_shown(path), number) for number, line in enumerate(handle, 1)
                             if spelled.search(line) and _shown(path) not in pinned)
    assert found == []


def _schema(name):
    with open(os.path.join(ROOT, "schemas", name), encoding="utf-8") as handle:
        return json.load(handle)


def test_the_judges_copies_of_the_rule_schema_are_the_schemas():
    schema = _schema("rules.schema.json")
    rule = schema["properties"]["rules"]["items"]
    assert rules.RULE_KEYS == tuple(rule["properties"])
    assert rules.SEVERITIES == tuple(rule["properties"]["severity"]["enum"])
    assert rules.ACTIONS == tuple(schema["$defs"]["action"]["enum"]) == tuple(rules.ACTION_WORDS)
    override = _schema("rule_overrides.schema.json")["additionalProperties"]
    assert rules.OVERRIDE_KEYS == tuple(override["properties"]) and rules.SEVERITIES == tuple(override["properties"]["severity"]["enum"])


def test_fleet_jsons_weakened_rules_are_the_judges_entries():
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_rules  # pylint: disable=import-outside-toplevel
    schema = _schema("fleet.schema.json")["properties"]["weakened_rules"]["items"]
    assert weakened_rules.CHANGES == tuple(schema["properties"]["change"]["enum"])
    (entry,) = weakened_rules.weakened_rules(load_rules(), load_rules(), {"n1": {"rule_overrides": {"membw.bandwidth": {"enabled": False}}}})
    assert set(entry) == set(schema["required"]) == set(schema["properties"])


def test_rules_are_validated_by_the_schema_only():
    """No hand re-implementation of the schema beside it: the judge's rules module validates nothing of a rule's shape."""
    names = {node.name for node in ast.walk(_tree(rules.__file__)) if isinstance(node, ast.FunctionDef)}
    assert not {name for name in names if "problem" in name} - {"param_kind_problem"}


def _numeric_defaults(path, names):
    """(line, name, number) of every ``something.get("<name>", <number>)`` where name is one of names."""
    for node in ast.walk(_tree(path)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant) and node.args[0].value in names
                and isinstance(node.args[1], ast.Constant) and type(node.args[1].value) in (int, float)):
            yield node.lineno, node.args[0].value, node.args[1].value


def test_checks_read_their_thresholds_from_the_rule_not_a_default_of_their_own():
    params = {name for rule in _load_yaml("docs", "rules.yaml")["rules"] for name in rule.get("params") or {}}
    copies = ["%s:%d %s=%r" % (_shown(path), line, name, number) for path in _python_files("plugins/plugin_utils")
              for line, name, number in _numeric_defaults(path, params)]
    assert copies == []


@pytest.mark.parametrize("rule_id, missing", [("health.retired_pages", "warn_at, fail_at"),
                                              ("health.remapped_rows", "uncorrectable_fail_at"),
                                              ("health.ecc_volatile_uncorrected", "max"), ("membw.repeat_cv", "max_cv_pct"),
                                              ("membw.bandwidth", "fail_below_pct, warn_below_pct"), ("p2p.pair_outlier", "fail_below_pct, warn_below_pct"),
                                              ("p2p.unidirectional", "fail_below_pct, warn_below_pct"), ("collective.p2p_gain", "min_ratio"),
                                              ("load.power_within_limit", "max_fraction_over_limit")])
def test_a_rule_without_the_params_its_check_reads_is_refused(tmp_path, rule_id, missing):
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_rules
    document = _load_yaml("docs", "rules.yaml")
    rule = [rule for rule in document["rules"] if rule["id"] == rule_id][0]
    del rule["params"]
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"rules": [rule]}), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape("rule %s: params %s missing: the %s check reads" % (rule_id, missing, rule["check"]))):
        load_rules(str(path))


MODULE_DOC_BLOCKS = ("DOCUMENTATION", "EXAMPLES", "RETURN")


@pytest.mark.parametrize("module", sorted(os.path.basename(path)[:-3] for path in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py"))
                                          if not path.endswith("__init__.py")))
def test_every_modules_documentation_examples_and_return_are_yaml(module):
    """ansible-test sanity refuses a module whose doc block is not YAML (a C(x: y) in a plain line is a mapping); said
    here in a second, not after the sanity run's minutes."""
    blocks = {}
    for node in _tree(os.path.join(ROOT, "plugins", "modules", module + ".py")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and getattr(node.targets[0], "id", None) in MODULE_DOC_BLOCKS:
            blocks[node.targets[0].id] = yaml.safe_load(node.value.value)
    assert set(blocks) == set(MODULE_DOC_BLOCKS), sorted(blocks)
    assert isinstance(blocks["DOCUMENTATION"], dict) and blocks["DOCUMENTATION"]["module"] == module


def test_fleet_jsons_unmatched_rule_kinds_are_the_sorters():
    kind = _schema("fleet.schema.json")["properties"]["unmatched_rules"]["items"]["properties"]["kind"]
    assert unmatched_kinds.UNMATCHED_KINDS == tuple(kind["enum"])
