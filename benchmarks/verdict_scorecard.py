"""Benchmark: the verdict scorecard (issue 44, point 10). Every fault of issue 44 and of the judge's fault tests, each
injected into a copy of a recorded healthy run or recorded on the rig, is judged the way playbooks/report.yml judges a
stored run; the verdict, the root cause and the action it gives are set beside the ones expected. Then every healthy
recording is judged and anything but its expected verdict is a false alarm, named with its reasons.

    python benchmarks/verdict_scorecard.py [--corpus benchmarks/verdict_scorecard.yaml] [--case NAME ...] [--timeout-s 60]

The corpus is data (benchmarks/verdict_scorecard.yaml): each case names its recording, the profile it is judged with,
the injection (a function of benchmarks/verdict_scorecard_injections.py), what is expected and where the case comes
from. The H100 recordings are found, not listed: every run directory under docs/examples/h100x1/ whose name starts with
2 and whose host recorded the profile acceptance (expected: pass).

Each case runs in a process of its own, in a temporary copy of its recording: the input check (check_inputs' pure
part: the rules file, the host's variables, a probe left with no enabled rule), then load_run and judge_run as
plugins/action/report.py calls them, with the profile the case names. A case that gives no verdict within --timeout-s
(a FIFO read without end) is stopped and counted wrong. Exit status 1 when any case is wrong or any false alarm exists.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from verdict_scorecard_injections import INJECTIONS, Bench  # noqa: E402  pylint: disable=wrong-import-position

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "verdict_scorecard.yaml")
H100_DIR = os.path.join(ROOT, "docs", "examples", "h100x1")
H100_PROFILE = "acceptance"
TIMEOUT_S = 30
# A case's process may not map more than this: a reader that loads a 2 GiB sparse file whole fails, not the machine.
MEMORY_LIMIT_BYTES = 3 * 1024 ** 3
REFUSED = "refused"
NOT_PROVEN = "not proven: "
NO_ACTION = "-"


@dataclass
class Expected:
    verdict: str
    root: List[str]               # the first reason's check id, any of these ("" for none)
    action: str
    names: List[str] = field(default_factory=list)      # check ids the reasons must also name
    words: str = ""                                      # the first reason contains this
    check_source: Dict[str, str] = field(default_factory=dict)  # {check id: text its reference_source contains}
    allowed: List[str] = field(default_factory=list)    # healthy rows: the only reasons (check ids) that are no false alarm


@dataclass
class Case:
    name: str
    recording: str                # a run directory, relative to the repository
    profile: Optional[str]
    injection: str
    expected: Expected
    source: str
    custom_profiles: Optional[Dict[str, List[str]]] = None
    overrides: Dict[str, Any] = field(default_factory=dict)
    why: str = ""                 # why the expectation is what it is, where not obvious
    previous: str = ""            # an earlier run of the same host, stored beside it (the drift checks compare with it)


def _expected(entry: Dict[str, Any]) -> Expected:
    root = entry.get("root", "")
    return Expected(verdict=entry["verdict"], root=list(root) if isinstance(root, list) else [root], action=entry.get("action", ""),
                    names=list(entry.get("names") or []), words=entry.get("words", ""),
                    check_source=dict(entry.get("check_source") or {}), allowed=list(entry.get("allowed") or []))


def _case(entry: Dict[str, Any], recordings: Dict[str, str]) -> Case:
    recording = recordings.get(entry["recording"], entry["recording"])
    return Case(name=entry["name"], recording=recording, profile=entry.get("profile"), injection=entry.get("injection", "none"),
                expected=_expected(entry["expected"]), source=entry["source"], custom_profiles=entry.get("custom_profiles"),
                overrides=dict(entry.get("overrides") or {}), why=entry.get("why", ""),
                previous=recordings.get(entry.get("previous", ""), entry.get("previous", "")))


def load_corpus(path: str = CORPUS) -> Dict[str, List[Case]]:
    """{"cases": [...], "healthy": [...]}: the corpus file's, the H100 recordings found added to the healthy ones."""
    with open(path, encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    recordings = document.get("recordings") or {}
    shared = document.get("overrides") or {}
    for group in ("cases", "healthy"):
        for entry in document[group]:
            if isinstance(entry.get("overrides"), str):
                entry["overrides"] = shared[entry["overrides"]]
    return {"cases": [_case(entry, recordings) for entry in document["cases"]],
            "healthy": [_case(entry, recordings) for entry in document["healthy"]] + h100_recordings()}


def h100_recordings(folder: str = H100_DIR) -> List[Case]:
    """Every run directory under folder (at any depth) named 2..., whose host recorded the profile acceptance."""
    found = []
    for parent, directories, _files in sorted(os.walk(folder)):
        directories.sort()
        for name in directories:
            path = os.path.join(parent, name)
            if name.startswith("2") and _recorded_profile(path) == H100_PROFILE:
                found.append(Case(name="H100 %s" % os.path.relpath(path, folder), recording=os.path.relpath(path, ROOT),
                                  profile=H100_PROFILE, injection="none", expected=Expected("pass", [""], "none"),
                                  source="docs/examples/h100x1 (found)"))
    return found


def _recorded_profile(run_path: str) -> Optional[str]:
    for host in sorted(os.listdir(run_path)):
        inputs = os.path.join(run_path, host, "inputs.json")
        if os.path.isfile(inputs) and not os.path.islink(inputs):
            with open(inputs, encoding="utf-8") as handle:
                profile = json.load(handle).get("profile")
            return profile if isinstance(profile, str) else None
    return None


# --- one case, in a process of its own -------------------------------------------------------------------------------

def _host_dir(run_path: str) -> str:
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.paths import RUN_LEVEL_DIRS
    hosts = sorted(name for name in os.listdir(run_path)
                   if os.path.isdir(os.path.join(run_path, name)) and name not in RUN_LEVEL_DIRS)
    if len(hosts) != 1:
        raise ValueError("%s holds %d host directories; a case's recording holds one" % (run_path, len(hosts)))
    return hosts[0]


def prepare(case: Case, workdir: str) -> Bench:
    """The case's recording copied under workdir/results, its injection applied; the Bench the judge is given."""
    source = os.path.join(ROOT, case.recording)
    results = os.path.join(workdir, "results")
    run_path = os.path.join(results, os.path.basename(source.rstrip("/")))
    shutil.copytree(source, run_path, symlinks=True)
    if case.previous:
        earlier = os.path.join(ROOT, case.previous)
        shutil.copytree(earlier, os.path.join(results, os.path.basename(earlier.rstrip("/"))), symlinks=True)
    host_dir = _host_dir(run_path)
    bench = Bench(results_dir=results, run_path=run_path, host_path=os.path.join(run_path, host_dir), host=host_dir,
                  profile=case.profile, custom_profiles=case.custom_profiles, overrides=dict(case.overrides))
    INJECTIONS[case.injection](bench)
    return bench


def input_problems(bench: Bench) -> List[str]:
    """What check_inputs (plugins/action/check_inputs.py) says of the case's variables before anything runs."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declarations
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_variables_check import (
        controller_problems, host_problems, unjudged_problems)
    controller = {}
    if bench.rules_path:
        controller["gpufleet_rules_file"] = bench.rules_path
    if bench.baselines_dir:
        controller["gpufleet_baselines_dir"] = bench.baselines_dir
    problems, _warnings, rules = controller_problems(controller)
    values: Dict[str, Any] = {}
    if bench.profile:
        values["gpufleet_profile"] = bench.profile
    if bench.custom_profiles:
        values["gpufleet_profiles"] = bench.custom_profiles
    if bench.overrides:
        values["gpufleet_rule_overrides"] = bench.overrides
    problems += ["%s: %s" % (bench.host, problem) for problem in host_problems(values, sorted(declarations()), rules)]
    if rules is not None:
        problems += unjudged_problems(controller, {bench.host: values}, rules)
    return problems


def _reason_ids(reason: str) -> List[str]:
    """The check ids a reason names: its own, or every headline a "not proven: a, b: ..." line names."""
    text = reason[len(NOT_PROVEN):] if reason.startswith(NOT_PROVEN) else reason
    return text.split(":", 1)[0].split(", ")


def judge_case(case: Case, workdir: str) -> Dict[str, Any]:
    """{verdict, root, action, reasons, reason_ids, sources}: what the report says of the case's one host."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.verdicts import host_action
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.stored_overrides import judged_overrides, stored_override_sources
    bench = prepare(case, workdir)
    problems = input_problems(bench)
    if problems:
        variable = problems[0].split(":", 1)[0].split()[0]
        return {"verdict": REFUSED, "root": variable, "action": NO_ACTION, "reasons": problems, "reason_ids": [variable], "sources": {}}
    run = load_run(bench.run_path)
    given = {host.name: bench.overrides for host in run.hosts} if bench.overrides else {}
    sources = stored_override_sources(run, given)
    overrides = judged_overrides(run, given)
    judgement = judge_run(run, bench.results_dir, overrides, bench.baselines_dir, bench.rules_path, workers=1, override_sources=sources,
                          profile=bench.profile, custom_profiles=bench.custom_profiles)
    if len(judgement.hosts) != 1:
        raise ValueError("the judge gave %d hosts for a run of one" % len(judgement.hosts))
    (verdict,) = judgement.hosts.values()
    found: Dict[str, List[str]] = {}
    for check in verdict.checks:
        if check.id in case.expected.check_source:
            found.setdefault(check.id, []).append(check.reference_source)
    ids = [_reason_ids(reason) for reason in verdict.reasons]
    return {"verdict": verdict.verdict, "root": ids[0][0] if ids else "", "action": host_action(verdict, judgement.texts)["action"],
            "reasons": list(verdict.reasons), "reason_ids": ids, "sources": found}


def _child(case: Case, workdir: str, sender: Any) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    try:
        sender.send(judge_case(case, workdir))
    except BaseException as exc:  # pylint: disable=broad-exception-caught  # a case that crashes is a wrong row, not the end
        sender.send({"crashed": "%s: %s" % (type(exc).__name__, exc), "trace": traceback.format_exc(limit=4)})


def run_case(case: Case, timeout_s: float = TIMEOUT_S) -> Dict[str, Any]:
    """The case judged in a process of its own; {"crashed": why} where it raised, hung or ran out of memory."""
    workdir = tempfile.mkdtemp(prefix="scorecard-")
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(case, workdir, sender), daemon=True)
    try:
        process.start()
        sender.close()
        if receiver.poll(timeout_s):
            try:
                return receiver.recv()
            except EOFError:
                return {"crashed": "the case's process ended without an answer (exit %s)" % process.exitcode}
        return {"crashed": "no verdict within %g s: the report hung" % timeout_s}
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        shutil.rmtree(workdir, ignore_errors=True)


# --- scoring ---------------------------------------------------------------------------------------------------------

def wrongs(expected: Expected, given: Dict[str, Any], healthy: bool = False) -> List[str]:
    """What differs from the expectation, in words; [] when the row is right."""
    if "crashed" in given:
        return [given["crashed"]]
    found = []
    if given["verdict"] != expected.verdict:
        found.append("verdict %s, expected %s" % (given["verdict"], expected.verdict))
    if given["root"] not in expected.root:
        found.append("root cause %s, expected %s" % (given["root"] or "none", " or ".join(root or "none" for root in expected.root)))
    if given["action"] != expected.action:
        found.append("action %s, expected %s" % (given["action"] or "none", expected.action))
    for name in expected.names:
        if not any(name in named for named in given["reason_ids"]):
            found.append("no reason names %s" % name)
    if expected.words and not (given["reasons"] and expected.words in given["reasons"][0]):
        found.append("the first reason does not say %r" % expected.words)
    for check_id, text in expected.check_source.items():
        sources = given["sources"].get(check_id) or []
        if not any(text in source for source in sources):
            found.append("%s's reference source does not name %s (%s)" % (check_id, text, "; ".join(sources) or "no such check"))
    if healthy:
        allowed = set(expected.allowed) | set(expected.names) | {root for root in expected.root if root}
        found.extend("false alarm: %s" % reason for reason, named in zip(given["reasons"], given["reason_ids"])
                     if not set(named) <= allowed)
    return found


def _cell(text: str, limit: int = 0) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if not limit or len(text) <= limit else text[:limit - 3] + "..."


def _triple(verdict: str, root: str, action: str) -> List[str]:
    return [_cell(verdict), _cell(root or "none"), _cell(action or "none")]


def case_table(cases: Sequence[Case], results: Sequence[Dict[str, Any]], problems: Sequence[List[str]]) -> List[str]:
    lines = ["| case | expected verdict | expected root cause | expected action | given verdict | given root cause | "
             "given action | ok | source |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for case, given, wrong in zip(cases, results, problems):
        expected = case.expected
        shown = _triple(given.get("verdict", "no verdict"), given.get("root", ""), given.get("action", "")) if "crashed" not in given \
            else ["crashed", _cell(given["crashed"], 60), "-"]
        roots = " or ".join(r or "none" for r in expected.root)
        cells = [_cell(case.name)] + _triple(expected.verdict, roots, expected.action) + shown
        lines.append("| %s |" % " | ".join(cells + ["yes" if not wrong else "**NO**", _cell(case.source)]))
    return lines


def healthy_table(cases: Sequence[Case], results: Sequence[Dict[str, Any]], problems: Sequence[List[str]]) -> List[str]:
    lines = ["| recording | profile | expected | given | false alarms and misses | ok |", "| --- | --- | --- | --- | --- | --- |"]
    for case, given, wrong in zip(cases, results, problems):
        given_words = given["crashed"] if "crashed" in given else "%s (%s)" % (given["verdict"], given["root"] or "no reason")
        expected = "%s%s" % (case.expected.verdict, " (%s)" % " or ".join(case.expected.root) if any(case.expected.root) else "")
        cells = [_cell("%s: %s" % (case.name, case.recording)), _cell(case.profile or "as recorded"), _cell(expected),
                 _cell(given_words, 80), _cell("; ".join(wrong) or "none", 400), "yes" if not wrong else "**NO**"]
        lines.append("| %s |" % " | ".join(cells))
    return lines


def _warm() -> None:
    """Import the judge and read the probes' declarations once: each case's process is forked from this one."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import probe_catalogue
    from ansible_collections.gpufleet.validation.plugins.plugin_utils import run_judgement  # noqa: F401
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report import verdicts  # noqa: F401  pylint: disable=unused-import
    probe_catalogue()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--corpus", default=CORPUS)
    parser.add_argument("--case", action="append", default=[], help="only the cases (or healthy recordings) of this name")
    parser.add_argument("--timeout-s", type=float, default=TIMEOUT_S)
    args = parser.parse_args(argv)
    corpus = load_corpus(args.corpus)
    _warm()
    out = []
    totals = {}
    for group, healthy in (("cases", False), ("healthy", True)):
        chosen = [case for case in corpus[group] if not args.case or case.name in args.case]
        results = [run_case(case, args.timeout_s) for case in chosen]
        problems = [wrongs(case.expected, given, healthy) for case, given in zip(chosen, results)]
        totals[group] = (len(chosen), sum(1 for wrong in problems if wrong))
        if not healthy:
            out += ["Faults: %d cases, %d right, %d wrong." % (len(chosen), totals[group][0] - totals[group][1], totals[group][1]), ""]
            out += case_table(chosen, results, problems)
            out += [""] + ["- %s: %s" % (case.name, "; ".join(wrong)) for case, wrong in zip(chosen, problems) if wrong]
        else:
            out += ["", "Healthy recordings: %d judged, %d with a false alarm or a miss." % totals[group], ""]
            out += healthy_table(chosen, results, problems)
            if not any(case.source == "docs/examples/h100x1 (found)" for case in chosen) and not args.case:
                out += ["", "H100 (docs/examples/h100x1/, profile acceptance): none recorded yet."]
    print("\n".join(out))
    return 1 if totals["cases"][1] or totals["healthy"][1] else 0


if __name__ == "__main__":
    sys.exit(main())
