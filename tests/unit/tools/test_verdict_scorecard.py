"""benchmarks/verdict_scorecard.py's corpus: every case's recording exists and holds one host, every injection is one
the injections module defines, each applies to its recording (it changes a file or what the judge is given) and keeps
every result schema-valid unless unreadable results are its point. The whole scorecard is the benchmark; here two
cases are judged end to end, and the H100 recordings are found by their recorded profile."""
import filecmp
import json
import os
import stat
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import verdict_scorecard as scorecard  # noqa: E402  pylint: disable=wrong-import-position,import-error
from verdict_scorecard_injections import INJECTIONS, UNREADABLE  # noqa: E402  pylint: disable=wrong-import-position,import-error

CORPUS = scorecard.load_corpus()
ALL = CORPUS["cases"] + CORPUS["healthy"]


def test_the_corpus_holds_the_issues_cases_and_healthy_recordings():
    assert len(CORPUS["cases"]) >= 20 and len(CORPUS["healthy"]) >= 5
    names = [case.name for case in ALL]
    assert len(names) == len(set(names)), "each case has its own name"
    assert all(case.source for case in ALL)
    assert all(case.expected.verdict in ("pass", "warn", "not_validated", "fail", "error", "refused") for case in ALL)
    assert all(case.expected.action for case in ALL), "every case expects an action"


@pytest.mark.parametrize("case", ALL, ids=[case.name for case in ALL])
def test_each_recording_exists_with_one_host(case):
    path = os.path.join(ROOT, case.recording)
    assert os.path.isdir(path) and not os.path.islink(path), case.recording
    assert scorecard._host_dir(path)  # pylint: disable=protected-access
    if case.previous:
        earlier = os.path.join(ROOT, case.previous)
        assert os.path.isdir(earlier) and os.path.basename(earlier) < os.path.basename(path), case.previous


def _changed(recording, bench):
    """The names of the host's files that the injection added, removed, turned into another kind of file, or edited."""
    names = set(os.listdir(recording)) | set(os.listdir(bench.host_path))
    changed = []
    for name in sorted(names):
        before, after = os.path.join(recording, name), os.path.join(bench.host_path, name)
        if not (os.path.lexists(before) and os.path.lexists(after)):
            changed.append(name)
        elif stat.S_IFMT(os.lstat(before).st_mode) != stat.S_IFMT(os.lstat(after).st_mode):
            changed.append(name)
        elif stat.S_ISREG(os.lstat(after).st_mode) and not filecmp.cmp(before, after, shallow=False):
            changed.append(name)
    return changed


@pytest.mark.parametrize("case", CORPUS["cases"], ids=[case.name for case in CORPUS["cases"]])
def test_each_injection_applies_and_keeps_the_results_valid_unless_unreadable_is_its_point(case, tmp_path):
    assert case.injection in INJECTIONS
    bench = scorecard.prepare(case, str(tmp_path))
    recording = os.path.join(ROOT, case.recording, bench.host)
    given = (bench.overrides != case.overrides, bench.baselines_dir is not None, bench.rules_path is not None)
    if case.injection != "none":
        assert _changed(recording, bench) or any(given), "%s changed nothing" % case.injection
    for name in sorted(os.listdir(bench.host_path)):
        path = os.path.join(bench.host_path, name)
        if not name.endswith(".json") or name in ("inputs.json", "writer.json"):
            continue
        mode = os.lstat(path).st_mode
        if case.injection in UNREADABLE and not (stat.S_ISREG(mode) and filecmp.cmp(path, os.path.join(recording, name), shallow=False)):
            continue
        with open(path, encoding="utf-8") as handle:
            envelope = json.load(handle)
        assert envelope_problems(envelope) == [], (case.name, name)


def test_the_unreadable_injections_leave_what_they_say(tmp_path):
    by_injection = {case.injection: case for case in CORPUS["cases"]}
    fifo = scorecard.prepare(by_injection["fifo_membw"], str(tmp_path / "fifo"))
    assert stat.S_ISFIFO(os.lstat(fifo.result_path("membw")).st_mode)
    sparse = scorecard.prepare(by_injection["sparse_gemm"], str(tmp_path / "sparse"))
    assert os.path.getsize(sparse.result_path("gemm")) == 2 * 1024 ** 3
    link = scorecard.prepare(by_injection["membw_links_to_dev_zero"], str(tmp_path / "link"))
    assert os.readlink(link.result_path("membw")) == "/dev/zero"


def test_a_fault_and_a_healthy_recording_judged_end_to_end():
    (half,) = [case for case in CORPUS["cases"] if case.injection == "half_speed_hbm"]
    given = scorecard.run_case(half)
    assert scorecard.wrongs(half.expected, given) == [], given
    healthy = CORPUS["healthy"][0]
    given = scorecard.run_case(healthy)
    assert scorecard.wrongs(healthy.expected, given, healthy=True) == [], given


def test_a_wrong_verdict_root_or_false_alarm_is_named():
    expected = scorecard.Expected("pass", [""], "none")
    given = {"verdict": "warn", "root": "membw.repeat_cv", "action": "re-run", "reasons": ["membw.repeat_cv: noisy"],
             "reason_ids": [["membw.repeat_cv"]], "sources": {}}
    assert scorecard.wrongs(expected, given, healthy=True) == [
        "verdict warn, expected pass", "root cause membw.repeat_cv, expected none", "action re-run, expected none",
        "false alarm: membw.repeat_cv: noisy"]
    assert scorecard.wrongs(expected, {"crashed": "no verdict within 30 s: the report hung"}) == ["no verdict within 30 s: the report hung"]


def test_the_h100_recordings_are_found_by_their_recorded_profile(tmp_path):
    assert scorecard.h100_recordings(str(tmp_path / "none")) == []
    for name, profile in (("20261206T100000Z-000001", "acceptance"), ("20261206T110000Z-000002", "quick"), ("notes", "acceptance")):
        host = tmp_path / "h100x1" / "call1" / name / "localhost"
        host.mkdir(parents=True)
        (host / "inputs.json").write_text(json.dumps({"host": "localhost", "profile": profile}))
    found = scorecard.h100_recordings(str(tmp_path / "h100x1"))
    assert [case.name for case in found] == ["H100 call1/20261206T100000Z-000001"]
    assert (found[0].profile, found[0].expected.verdict) == ("acceptance", "pass")
