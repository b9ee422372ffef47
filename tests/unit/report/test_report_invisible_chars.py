"""Invisible and bidirectional characters in a host name or a reason are shown as <U+XXXX> in every output a person
reads (HTML, Markdown, JUnit, Prometheus, the terminal), so that "goo\\u200bd" cannot pass for "good" nor
"good\\u202ecod.exe" for "goodexe.doc" (issue 32). fleet.json keeps the real name, written as \\uXXXX escapes."""
from __future__ import annotations

import json
import os
import sys
import unicodedata

from junitparser import JUnitXml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.validation.plugins.plugin_utils.control_chars import INVISIBLE, escape_control, terminal_text
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check, FleetJudgement, HostVerdict
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import gate_lines, verdict_lines
from report_writes import Written  # noqa: E402  pylint: disable=import-error

ZERO_WIDTH = "goo\u200bd"
OVERRIDE = "good\u202ecod.exe"
SHOWN = {ZERO_WIDTH: "goo<U+200B>d", OVERRIDE: "good<U+202E>cod.exe"}
REASON = "health.cuda_init: fine\u2066 \u2069really\u2028\ufeff"
REASON_SHOWN = "health.cuda_init: fine<U+2066> <U+2069>really<U+2028><U+FEFF>"


def test_every_format_character_and_the_separators_are_invisible_ones():
    missed = [hex(code) for code in range(sys.maxunicode + 1)
              if unicodedata.category(chr(code)) == "Cf" and not INVISIBLE.match(chr(code))]
    assert not missed
    assert INVISIBLE.match("\u2028") and INVISIBLE.match("\u2029") and INVISIBLE.match("\u3164")
    assert not INVISIBLE.search("gpu-a01 é ü 中 עברית العربية 😀 \t")


def test_escape_control_and_terminal_text_show_them():
    assert escape_control(ZERO_WIDTH) == "goo<U+200B>d"
    assert terminal_text(OVERRIDE + "\n\U000e0041") == "good<U+202E>cod.exe / <U+E0041>"


def _judgement():
    verdicts = {}
    for host in (ZERO_WIDTH, OVERRIDE):
        check = Check(id="health.cuda_init", host=host, probe="health", status="fail", reason=REASON.split(": ", 1)[1])
        verdicts[host] = HostVerdict(host, "fail", [REASON], [check], groups=["rack\u200b1"])
    return FleetJudgement("r1", verdicts)


def test_the_terminal_lines_show_them():
    lines = verdict_lines(_judgement()) + gate_lines(_judgement())
    assert sorted(set(lines)) == sorted("%s: fail - %s" % (SHOWN[host], REASON_SHOWN) for host in SHOWN)
    assert not any(INVISIBLE.search(line) for line in lines)


def test_every_file_a_person_reads_shows_them_and_fleet_json_keeps_the_names(fleet):
    for host in SHOWN:
        fleet.write(host, "health", fleet.envelope(host, status="error", reason=REASON.split(": ", 1)[1]))
    written = Written()
    render_run(str(fleet.run_dir), list(SHOWN), {}, written.__setitem__, judgement=_judgement())
    for path, text in written.items():
        assert not INVISIBLE.search(text), (path, INVISIBLE.findall(text))
    run_dir = os.path.realpath(str(fleet.run_dir))

    def output(name):
        return written[os.path.join(run_dir, name)]

    assert sorted(json.loads(output("fleet.json"))["hosts"]) == sorted(SHOWN)
    assert "goo\\u200bd" in output("fleet.json")
    junit = JUnitXml.fromstring(output("junit.xml").encode("utf-8"))
    assert sorted(suite.name for suite in junit) == sorted(SHOWN.values())
    assert "fine&lt;U+2066&gt; &lt;U+2069&gt;really" in output("junit.xml")
    families = {family.name: family for family in text_string_to_metric_families(output("gpufleet.prom"))}
    assert {sample.labels["host"] for sample in families["gpufleet_host_verdict"].samples} == set(SHOWN.values())
    for shown in SHOWN.values():
        assert shown.replace("<", "&lt;").replace(">", "&gt;") in output("index.html")
        assert shown.replace("<", "\\<").replace(">", "\\>") in output("index.md")
    dossiers = [text for path, text in written.items() if path.endswith("dossier.md") and "/goo" in path]
    assert len(dossiers) == 2 and all("fine\\<U+2066\\> \\<U+2069\\>really" in text for text in dossiers)
