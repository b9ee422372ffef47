"""Issue 44, point 6: the shipped rules a run disabled or downgraded are named at run level: fleet.json (valid against
its schema), the fleet index (HTML and Markdown, near the top, escaped) and the console's summary lines."""
import json
import os
from types import SimpleNamespace

from ansible_collections.gpufleet.validation.plugins.action.report import stored_override_sources

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.weakened_rules import weakened_rules
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_rules
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.markup import markdown_escape
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import weakened_rule_lines
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from report_writes import Written  # noqa: E402  pylint: disable=import-error


def _weaken(judged):
    """membw.bandwidth disabled on rack1's hosts by their overrides; health.cuda_init downgraded on the hostile host."""
    hosts = {name: {"groups": judged.groups.get(name, []), "rule_overrides": {}} for name in judged.judgement.hosts}
    for name, groups in judged.groups.items():
        if "rack1" in groups:
            hosts[name]["rule_overrides"] = {"membw.bandwidth": {"enabled": False}}
    hosts[judged.evil_host]["rule_overrides"] = {"health.cuda_init": {"severity": "warn"}}
    judged.judgement.weakened_rules = weakened_rules(load_rules(), load_rules(), hosts)
    written = Written()
    render_run(str(judged.run_dir), judged.expected, judged.groups, written.__setitem__, judgement=judged.judgement)
    root = os.path.realpath(str(judged.run_dir))
    return {os.path.relpath(path, root): text for path, text in written.items()}


def test_fleet_json_carries_the_weakened_rules_and_stays_valid(judged):
    document = json.loads(_weaken(judged)["fleet.json"])
    errors = list(schema_validator("fleet.schema.json").iter_errors(document))
    assert not errors, [(list(error.path), error.message) for error in errors]
    rack1 = sorted(name for name, groups in judged.groups.items() if "rack1" in groups)
    assert document["weakened_rules"] == [
        {"rule": "health.cuda_init", "probe": "health", "change": "downgraded", "how": "severity warn where docs/rules.yaml says fail",
         "by": "gpufleet_rule_overrides", "hosts": [judged.evil_host], "groups": []},
        {"rule": "membw.bandwidth", "probe": "membw", "change": "disabled", "how": "enabled: false", "by": "gpufleet_rule_overrides",
         "hosts": rack1, "groups": ["rack1"]}]


def test_a_run_that_weakens_nothing_says_so_in_fleet_json(judged):
    written = Written()
    render_run(str(judged.run_dir), judged.expected, judged.groups, written.__setitem__, judgement=judged.judgement)
    (text,) = [text for path, text in written.items() if path.endswith("fleet.json")]
    assert json.loads(text)["weakened_rules"] == []
    (index,) = [text for path, text in written.items() if path.endswith("index.html")]
    assert "Rules turned off or weakened" not in index


def test_the_index_names_each_weakened_rule_its_change_source_and_hosts_before_what_to_do(judged):
    written = _weaken(judged)
    page, markdown = written["index.html"], written["index.md"]
    html_top, markdown_top = page.split('<h2 id="todo">What to do')[0], markdown.split("## What to do")[0]
    for top, escaped in ((html_top, str), (markdown_top, markdown_escape)):
        assert "Rules turned off or weakened in this run" in top
        for text in ("membw.bandwidth", "health.cuda_init", "gpufleet_rule_overrides", "disabled", "downgraded", "rack1", "gpu-a01"):
            assert escaped(text) in top, text
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;../x" in html_top
    assert "\\<script\\>alert(1)\\</script\\>../x" in markdown_top


def test_the_console_says_one_line_per_weakened_rule(judged):
    _weaken(judged)
    lines = weakened_rule_lines(judged.judgement)
    total = len(judged.judgement.hosts)
    assert lines[0] == ("rule weakened: health.cuda_init downgraded (severity warn where docs/rules.yaml says fail) by "
                        "gpufleet_rule_overrides on 1 of %d hosts: %s" % (total, judged.evil_host))
    assert lines[1].startswith("rule weakened: membw.bandwidth disabled (enabled: false) by gpufleet_rule_overrides on 4 of %d hosts "
                               "(group rack1): " % total)
    assert len(lines) == 2


def test_an_override_only_the_stored_run_gave_is_named_as_stored():
    stored = {"health.cuda_init": {"severity": "warn"}, "membw.bandwidth": {"enabled": False}}
    run = SimpleNamespace(hosts=[SimpleNamespace(name="n1", dir_name="n1", inputs={"rule_overrides": stored}),
                                 SimpleNamespace(name="n2", dir_name="n2", inputs={})])
    assert stored_override_sources(run, {"n1": {"membw.bandwidth": {"enabled": False}}}) == {
        "n1": {"health.cuda_init": "gpufleet_rule_overrides stored with the run (n1/inputs.json)"}}
