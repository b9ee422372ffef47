"""Control characters in a host name or a reason reach no file and no terminal line raw: they are written as \\xNN."""
from __future__ import annotations

import json
import os
import re

from junitparser import JUnitXml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check, FleetJudgement, HostVerdict
from ansible_collections.gpufleet.validation.plugins.plugin_utils import control_chars
from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import escape_control, terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.exports import _compact_json  # pylint: disable=protected-access
from markupsafe import Markup

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.markup import HTML, markdown_code_block
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import gate_lines, verdict_lines
from report_writes import Written  # noqa: E402  pylint: disable=import-error

HOST = "evil\x1b[31m\x07\x7f\x9b-node"
SHOWN = "evil\\x1b[31m\\x07\\x7f\\x9b-node"
REASON = "health.cuda_init: CUDA failed \x1b]0;pwned\x07 \x85 here"
# Every C0 but tab, line feed and carriage return, DEL and C1.
RAW_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _judgement():
    check = Check(id="health.cuda_init", host=HOST, probe="health", status="fail", reason=REASON.split(": ", 1)[1], value=1.0)
    return FleetJudgement("r1", {HOST: HostVerdict(HOST, "fail", [REASON], [check], groups=["rack\x1b1"])})


def test_escape_control_and_terminal_text():
    assert escape_control("a\x1b\tb\nc\x7f\x9f\x00") == "a\\x1b\tb\nc\\x7f\\x9f\\x00"
    assert terminal_text("a\x1b[2J\nb\r\tc") == "a\\x1b[2J / b / c"
    assert terminal_text(None) == "" and terminal_text("é ü 中") == "é ü 中"


def test_a_module_stderr_in_a_reason_reads_as_text_on_one_terminal_line():
    reason = ("the probe module could not be started on the host: MODULE FAILURE; module_stderr: "
              "pyenv: python3.13: command not found\n\nThe `python3.13' command exists in these Python versions:\r\n  3.13.1\n")
    assert terminal_text(reason) == (
        "the probe module could not be started on the host: MODULE FAILURE; module_stderr: pyenv: python3.13: command "
        "not found / The `python3.13' command exists in these Python versions: / 3.13.1")


def test_a_line_break_cannot_forge_a_line_and_the_other_control_characters_stay_escaped():
    # A newline or a carriage return that would start a line of Ansible's own, or overwrite the line, is a separator;
    # the vertical tab, form feed, NEL, ESC and BEL, which no message needs, stay visible as \xNN.
    forged = "ok\nok: [gpu-a01-n01] => pass\rfatal: [x]\x0b\x0c\x85\x1b[2K\x07"
    shown = terminal_text(forged)
    assert shown == "ok / ok: [gpu-a01-n01] => pass / fatal: [x]\\x0b\\x0c\\x85\\x1b[2K\\x07"
    assert not re.search("[\x00-\x08\x0a-\x1f\x7f-\x9f]", shown)
    assert terminal_text("\x1c\n edge \x1f") == "\\x1c / edge \\x1f"  # no control character is dropped unseen


def test_the_summary_and_gate_lines_for_the_terminal_hold_no_control_character():
    lines = verdict_lines(_judgement()) + gate_lines(_judgement())
    assert lines == ["%s: fail - health.cuda_init: CUDA failed \\x1b]0;pwned\\x07 \\x85 here" % SHOWN] * 2
    assert not any(re.search("[\x00-\x1f\x7f-\x9f]", line) for line in lines)


def test_no_written_file_holds_a_raw_control_character_and_the_exports_still_parse(fleet):
    fleet.write(HOST, "health", fleet.envelope(HOST, status="error", reason="bell \x07 and \x1b[2J and \x9b",
                                               command=["python3", "probe\x1b.py"]))
    written = Written()
    render_run(str(fleet.run_dir), [HOST], {HOST: ["rack\x1b1"]}, written.__setitem__, judgement=_judgement())
    # the fleet outputs; each host's dossier and measurements page, HTML and Markdown, and each judged host's outcome
    assert len(written) == 5 + 4 * 6 + len(_judgement().hosts)
    for path, text in written.items():
        assert not RAW_CONTROL.search(text), (path, RAW_CONTROL.findall(text))
    run_dir = os.path.realpath(str(fleet.run_dir))
    fleet_json = json.loads(written[os.path.join(run_dir, "fleet.json")])
    assert HOST in fleet_json["hosts"]
    assert fleet_json["hosts"][HOST]["reasons"] == [REASON]
    families = {family.name: family for family in text_string_to_metric_families(written[os.path.join(run_dir, "gpufleet.prom")])}
    hosts = {sample.labels["host"] for sample in families["gpufleet_host_verdict"].samples}
    assert hosts == {SHOWN}
    junit = JUnitXml.fromstring(written[os.path.join(run_dir, "junit.xml")].encode("utf-8"))
    assert SHOWN in [suite.name for suite in junit]
    index_md = written[os.path.join(run_dir, "index.md")]
    assert "evil\\\\x1b\\[31m\\\\x07\\\\x7f\\\\x9b-node" in index_md
    index_html = written[os.path.join(run_dir, "index.html")]
    assert SHOWN in index_html
    dossier = [text for path, text in written.items() if path.endswith("dossier.md") and "evil" in path]
    assert dossier and "bell \\\\x07 and \\\\x1b\\[2J" in dossier[0]


def test_a_code_block_shows_control_characters_as_text():
    assert markdown_code_block("ls \x1b[31m") == "```\nls \\x1b[31m\n```"


def test_the_tables_built_in_python_show_control_characters_in_a_measurement_as_text(fleet):
    # The measurement, check and change rows are built as HTML in Python (report/markup.py's BuiltHtml) and are not scanned
    # again as a whole: each part must have been escaped on its own.
    data = {"link\x1b[2J": {"state\x07": "up \x9b down", "rate_gbps": 3.5}}
    fleet.write(HOST, "membw", fleet.envelope(HOST, probe="membw", data=data))
    check = Check(id="membw.state\x07", host=HOST, probe="membw", status="warn", reason="odd \x1b[31m state", value="up")
    judgement = FleetJudgement("r1", {HOST: HostVerdict(HOST, "warn", ["membw.state: odd"], [check], groups=[])})
    written = Written()
    render_run(str(fleet.run_dir), [HOST], {}, written.__setitem__, judgement=judgement)
    shown = {"measurements.html": ["<tr class=\"f-warn\"><td><code>link\\x1b[2J.state\\x07</code></td><td>up \\x9b down</td>",
                                   "<code>membw.state\\x07</code>"],
             "dossier.html": ["odd \\x1b[31m state"],
             "measurements.md": ["| link\\\\x1b\\[2J.state\\\\x07 | up \\\\x9b down |", "membw.state\\\\x07 ("],
             "dossier.md": ["odd \\\\x1b\\[31m state"]}
    for name, parts in shown.items():
        dossier = [text for path, text in written.items() if path.endswith(name) and "evil" in path]
        assert dossier and not RAW_CONTROL.search(dossier[0]), RAW_CONTROL.findall(dossier[0])
        assert all(part in dossier[0] for part in parts), name


def test_markup_not_built_by_the_report_is_still_scanned_for_control_characters():
    assert HTML.from_string("{{ plot | safe }}|{{ text }}").render(plot="<b>\x1b</b>", text=Markup("<i>\x07</i>")) == \
        "<b>\\x1b</b>|<i>\\x07</i>"


def test_every_ascii_character_is_escaped_as_the_full_search_escapes_it():
    """escape_control's quick answer for printable ASCII agrees, character by character, with the search it skips."""
    for code in range(128):
        text = "node %s 01" % chr(code)
        for keep in ("\t\n", "\t", ""):
            expected = control_chars._SHOWN_ESCAPED.sub(  # pylint: disable=protected-access
                lambda match, keep=keep: match.group() if match.group() in keep else control_chars._visible(match.group()), text)
            assert escape_control(text, keep=keep) == expected, (code, keep)


def test_fleet_json_writes_del_and_c1_as_escapes_in_an_otherwise_ascii_entry():
    assert _compact_json({"reason": "a\x7fb", "name": "plain"}) == '{"reason":"a\\u007fb","name":"plain"}'
    assert _compact_json({"reason": "a\x85b"}) == '{"reason":"a\\u0085b"}'
    assert _compact_json({"reason": "plain ascii"}) == '{"reason":"plain ascii"}'
