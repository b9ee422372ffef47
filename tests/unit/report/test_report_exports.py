"""fleet.json against its schema, JUnit XML through a real JUnit parser, the Prometheus textfile through prometheus_client."""
import dataclasses
import json
import math
import os
import re
import shutil

import pytest
import yaml
from junitparser import Error, Failure, JUnitXml, Skipped
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.baseline_checks import judge_measurements
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.measurement import Device, Measurement
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check, FleetJudgement, HostVerdict
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.rules import RuleContext
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.exports import (
    fleet_json,
    junit_xml,
    label_value,
    prometheus_text,
    run_timestamp,
    junit_case_name,
)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from recorded_runs import RECORDED_QUICK_RUN  # noqa: E402  pylint: disable=import-error
from report_writes import Written  # noqa: E402  pylint: disable=import-error

# host: (tests, failures, errors, skipped)
EXPECTED_JUNIT = {
    "gpu-a01": (6, 1, 0, 0), "gpu-a02": (4, 0, 0, 0), "gpu-a03": (3, 0, 0, 0), "cpu-b01": (1, 0, 0, 1),
    "gpu-c01": (1, 0, 1, 0), "gpu-d01": (1, 0, 1, 0), "gpu-e01": (1, 0, 1, 0),
}


def _written(judged):
    written = Written()
    render_run(str(judged.run_dir), judged.expected, judged.groups, written.__setitem__, judgement=judged.judgement)
    root = os.path.realpath(str(judged.run_dir))
    return {os.path.relpath(path, root): text for path, text in written.items()}


def _validator():
    return schema_validator("fleet.schema.json")


# ---------------------------------------------------------------- fleet.json

def test_fleet_json_is_valid_against_its_schema_and_complete(judged):
    written = _written(judged)
    document = json.loads(written["fleet.json"])
    errors = sorted(_validator().iter_errors(document), key=lambda error: list(error.path))
    assert not errors, [(list(error.path), error.message) for error in errors]
    judgement = judged.judgement
    assert document["run_id"] == judgement.run_id and document["previous_run_id"] == judged.previous_run_id
    assert document["counts"] == {"fail": 2, "error": 2, "unreachable": 1, "not_validated": 0, "warn": 1, "pass": 2}
    assert document["gate"]["passed"] is False and "gpu-e01" in document["gate"]["gating_hosts"]
    assert document["hosts_worst_first"][-1] == "gpu-a03"
    assert set(document["hosts"]) == set(judgement.hosts)
    for name, verdict in judgement.hosts.items():
        host = document["hosts"][name]
        assert host["verdict"] == verdict.verdict and host["reasons"] == verdict.reasons and host["sku"] == verdict.sku
        assert host["checks"] == [check.to_dict() for check in verdict.checks]
        for path in host["dossier"].values():
            assert path in written, path
    assert document["unmatched_rules"][0]["id"] == "gemm.fp8_tflops"
    assert document["fleet_statistics"]["h200-sxm"]["membw.plateau_gbps"]["median"] == 4010.0


def test_fleet_json_is_strict_json_whatever_the_values(judged):
    check = Check(id="membw.plateau_gbps", host="gpu-a01", probe="membw", status="error", reason="NaN",
                  value=float("nan"), reference=(float("inf"), {"a", "b"}), unit="GB/s")
    judged.judgement.hosts["gpu-a01"].checks.append(check)
    document = fleet_json(judged.judgement, load_run(str(judged.run_dir), judged.expected, judged.groups))
    text = json.dumps(document, allow_nan=False)
    stored = json.loads(text)["hosts"]["gpu-a01"]["checks"][-1]
    assert stored["value"] == "NaN" and stored["reference"] == ["Infinity", ["a", "b"]]
    assert not list(_validator().iter_errors(json.loads(text)))


def test_a_document_that_breaks_the_contract_is_caught_by_the_schema(judged):
    document = json.loads(_written(judged)["fleet.json"])
    document["hosts"]["gpu-a01"]["verdict"] = "maybe"
    document["hosts"]["gpu-a02"]["dossier"]["html"] = "../elsewhere/dossier.html"
    del document["counts"]["pass"]
    paths = {tuple(error.path) for error in _validator().iter_errors(document)}
    assert ("hosts", "gpu-a01", "verdict") in paths and ("hosts", "gpu-a02", "dossier", "html") in paths and ("counts",) in paths


# ---------------------------------------------------------------- JUnit

def _suites(text):
    return {suite.name: suite for suite in JUnitXml.fromstring(text.encode("utf-8"))}


def test_junit_has_one_suite_per_host_with_the_right_counts(judged):
    text = _written(judged)["junit.xml"]
    suites = _suites(text)
    expected = dict(EXPECTED_JUNIT, **{judged.evil_host: (2, 1, 0, 1)})
    assert set(suites) == set(expected) | {"(rules that matched nothing)"}
    for name, (tests, failures, errors, skipped) in expected.items():
        suite = suites[name]
        cases = list(suite)
        counted = (len(cases), sum(1 for case in cases for result in case.result if isinstance(result, Failure)),
                   sum(1 for case in cases for result in case.result if isinstance(result, Error)),
                   sum(1 for case in cases for result in case.result if isinstance(result, Skipped)))
        assert counted == (tests, failures, errors, skipped), name
        assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (tests, failures, errors, skipped), name
        assert all(case.classname == "gpufleet." + name for case in cases)
    totals = JUnitXml.fromstring(text.encode("utf-8"))
    assert (totals.tests, totals.failures, totals.errors, totals.skipped) == (20, 2, 3, 2)


def test_junit_testcases_name_the_check_and_gpu_and_carry_the_reason(judged):
    suites = _suites(_written(judged)["junit.xml"])
    cases = {case.name: case for case in suites["gpu-a01"]}
    assert set(cases) == {"health.cuda_init", "membw.plateau_gbps", "fleet.membw.plateau_gbps",
                          "health.volatile_uncorrected_count gpu0", "health.volatile_uncorrected_count gpu1",
                          "health.pcie_link_width gpu1"}
    failure = cases["health.volatile_uncorrected_count gpu1"].result[0]
    assert isinstance(failure, Failure) and failure.message.startswith("GPU 1 has 2 volatile uncorrected ECC errors")
    assert "threshold: == 0" in failure.text and judged.uuid1 in failure.text
    warn = cases["health.pcie_link_width gpu1"]
    assert warn.is_passed and "GPU 1 runs its PCIe link at x8 of x16" in warn.system_out
    assert 'name="status" value="warn"' in warn.tostring().decode()
    unreachable = list(suites["gpu-e01"])
    assert [case.name for case in unreachable] == ["host.reachable"]
    assert unreachable[0].result[0].message == "ssh: connect to host gpu-e01 port 22: Connection refused"
    assert [case.name for case in suites["gpu-d01"]] == ["host.verdict"]
    skipped = list(suites["cpu-b01"])[0].result[0]
    assert isinstance(skipped, Skipped) and skipped.message == "no NVIDIA GPU on this host"
    evil = {case.name: case for case in suites[judged.evil_host]}
    assert evil["health.gpu_name gpu0"].result[0].message.startswith('GPU 0 is named "<img src=x')
    assert evil["health.gpu_name gpu0"].classname == "gpufleet." + judged.evil_host


def test_junit_survives_characters_xml_cannot_hold():
    judgement = FleetJudgement("r1", {"h\x01": HostVerdict("h\x01", "fail", ["bad\x00byte"], [
        Check(id="x.y", host="h\x01", probe="x", status="fail", reason="nul \x00 & <tag> \"q\" \x1b[31m")])})
    suites = _suites(junit_xml(judgement))
    (suite,) = suites.values()
    (case,) = list(suite)
    assert suite.name == "h\\x01" and case.result[0].message == 'nul \\x00 & <tag> "q" \\x1b[31m'
    assert junit_case_name(judgement.hosts["h\x01"].checks[0]) == "x.y"


# ---------------------------------------------------------------- Prometheus

def _samples(text):
    families = {family.name: family for family in text_string_to_metric_families(text)}
    return families, {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
                      for family in families.values() for sample in family.samples}


def _key(name, **labels):
    return name, tuple(sorted(labels.items()))


def test_prometheus_text_parses_and_holds_the_verdicts_statuses_and_values(judged):
    text = _written(judged)["gpufleet.prom"]
    families, samples = _samples(text)
    assert set(families) >= {"gpufleet_host_verdict", "gpufleet_check_status", "gpufleet_check_value",
                             "gpufleet_run_timestamp_seconds", "gpufleet_hosts", "gpufleet_run_info"}
    assert all(family.type == "gauge" and family.documentation for family in families.values())
    for name, verdict in judged.judgement.hosts.items():
        one_hot = [samples[_key("gpufleet_host_verdict", host=name, verdict=candidate)]
                   for candidate in ("pass", "warn", "fail", "error", "unreachable")]
        assert sum(one_hot) == 1 and samples[_key("gpufleet_host_verdict", host=name, verdict=verdict.verdict)] == 1
    assert samples[_key("gpufleet_hosts", verdict="fail")] == 2 and samples[_key("gpufleet_hosts", verdict="pass")] == 2
    status = "gpufleet_check_status"
    assert samples[_key(status, host="gpu-a01", check="health.volatile_uncorrected_count", gpu="1")] == 2
    assert samples[_key(status, host="gpu-a01", check="health.volatile_uncorrected_count", gpu="0")] == 0
    assert samples[_key(status, host="gpu-a01", check="health.pcie_link_width", gpu="1")] == 1
    assert samples[_key(status, host="gpu-c01", check="health.probe_status", gpu="")] == 3
    assert samples[_key(status, host="cpu-b01", check="health.cuda_init", gpu="")] == -1
    value = "gpufleet_check_value"
    assert samples[_key(value, host="gpu-a02", check="fleet.membw.plateau_gbps", gpu="", unit="GB/s")] == 3500.0
    assert samples[_key(value, host="gpu-a01", check="health.volatile_uncorrected_count", gpu="1", unit="")] == 2
    # text and boolean values are not samples
    assert not [key for key in samples if key[0] == value and dict(key[1])["check"] in ("health.gpu_name", "health.cuda_init")]
    assert samples[_key("gpufleet_run_timestamp_seconds")] == run_timestamp(load_run(str(judged.run_dir)))
    assert samples[_key("gpufleet_run_timestamp_seconds")] == 1796004000.0  # 2026-11-30T02:00:00Z, from the run id
    evil = [key for key in samples if dict(key[1]).get("host") == judged.evil_host]
    assert evil, "the hostile host name survives the round trip as a label value"


def test_prometheus_label_values_are_escaped():
    host = 'rack "7" \\ node\nnext'
    check = Check(id='odd."id"', host=host, probe="membw", status="fail", reason="r", value=float("inf"), unit='G"B\\s',
                  gpu_index=3)
    judgement = FleetJudgement("r1", {host: HostVerdict(host, "fail", ["r"], [check])})
    text = prometheus_text(judgement, None, 1.5)
    assert 'host="rack \\"7\\" \\\\ node\\nnext"' in text
    assert label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    families, samples = _samples(text)
    assert samples[_key("gpufleet_check_status", host=host, check='odd."id"', gpu="3")] == 2
    assert math.isinf(samples[_key("gpufleet_check_value", host=host, check='odd."id"', gpu="3", unit='G"B\\s')])
    assert samples[_key("gpufleet_run_timestamp_seconds")] == 1.5
    assert len(text.splitlines()) == len(set(text.splitlines()))


def test_prometheus_keeps_one_series_per_label_set():
    checks = [Check(id="p2p.bandwidth", host="h", probe="p2p", status=status, reason="r", value=value, gpu_index=0)
              for status, value in (("pass", 1.0), ("fail", 2.0), ("warn", 3.0))]
    judgement = FleetJudgement("r1", {"h": HostVerdict("h", "fail", ["r"], checks)})
    families, samples = _samples(prometheus_text(judgement, None, 0))
    assert len(families["gpufleet_check_status"].samples) == 1
    assert samples[_key("gpufleet_check_status", host="h", check="p2p.bandwidth", gpu="0")] == 2
    assert samples[_key("gpufleet_check_value", host="h", check="p2p.bandwidth", gpu="0", unit="")] == 2.0


def test_a_check_of_a_port_names_it_in_every_export_and_a_gpus_check_is_as_before():
    """A metric keyed by a device that is not a GPU (judge/metrics.py): fleet.json holds its device, the junit case name
    and the Prometheus device label name it, so two ports of one check are two cases and two series."""
    ports = [Check(id="fleet.fabric.rdma_write_host_gbitps", host="h", probe="fabric", status=status, reason="r", value=value,
                   unit="Gb/s", device=device) for status, value, device in (("pass", 390.5, "mlx5_0/1"), ("warn", 200.0, "mlx5_3/1"))]
    gpu = Check(id="p2p.bandwidth", host="h", probe="p2p", status="pass", reason="r", value=1.0, gpu_index=0)
    judgement = FleetJudgement("r1", {"h": HostVerdict("h", "warn", ["r"], ports + [gpu])})
    document = fleet_json(judgement, None)
    checks = document["hosts"]["h"]["checks"]
    assert [check.get("device") for check in checks] == ["mlx5_0/1", "mlx5_3/1", None] and "device" not in checks[2]
    assert list(_validator().iter_errors(document)) == []
    (suite,) = _suites(junit_xml(judgement)).values()
    names = {case.name for case in suite}
    assert {"fleet.fabric.rdma_write_host_gbitps mlx5_0/1", "fleet.fabric.rdma_write_host_gbitps mlx5_3/1", "p2p.bandwidth gpu0"} <= names
    families, samples = _samples(prometheus_text(judgement, None, 0))
    check = "fleet.fabric.rdma_write_host_gbitps"
    assert samples[_key("gpufleet_check_status", host="h", check=check, gpu="", device="mlx5_3/1")] == 1
    assert samples[_key("gpufleet_check_value", host="h", check=check, gpu="", device="mlx5_0/1", unit="Gb/s")] == 390.5
    assert samples[_key("gpufleet_check_status", host="h", check="p2p.bandwidth", gpu="0")] == 0


@pytest.mark.parametrize("run_id, expected", [("20261130T025347Z-985490", 1796007227.0), ("manual-run", 1796004000.0)])
def test_run_timestamp_from_the_run_id_or_the_earliest_probe(judged, tmp_path, run_id, expected):
    run = load_run(str(judged.run_dir))
    run.run_id = run_id
    assert run_timestamp(run) == expected


def _no_gpu_host(check_id="host.gpu_measured"):
    reason = "%s: no GPU was measured on this host" % check_id
    return FleetJudgement("r1", {"cpu-only": HostVerdict("cpu-only", "warn", [reason], [
        Check(id=check_id, host="cpu-only", probe="", status="warn", reason=reason)])}), reason


@pytest.mark.parametrize("check_id", ["host.gpu_measured", "host.nothing_checked"])
def test_junit_fails_a_warn_host_the_acceptance_gate_refuses_because_no_gpu_was_measured(check_id):
    judgement, reason = _no_gpu_host(check_id)
    (suite,) = _suites(junit_xml(judgement, gated=True)).values()
    cases = {case.name: case for case in suite}
    assert set(cases) == {check_id, "host.verdict"}
    assert cases[check_id].is_passed
    (failure,) = cases["host.verdict"].result
    assert isinstance(failure, Failure) and failure.message == reason and suite.failures == 1


@pytest.mark.parametrize("check_id", ["host.gpu_measured", "host.nothing_checked"])
def test_junit_passes_that_warn_host_when_the_run_reports_only_and_says_the_gate_would_refuse_it(check_id):
    """Issue 31, and 44 (every profile gates): a report-only run (gpufleet_gate: false) exits 0 on this host, so its
    junit.xml must not fail it; the reason stays visible."""
    judgement, reason = _no_gpu_host(check_id)
    text = junit_xml(judgement, gated=False)
    (suite,) = _suites(text).values()
    cases = {case.name: case for case in suite}
    assert set(cases) == {check_id, "host.verdict"}
    assert all(case.is_passed for case in cases.values())
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (2, 0, 0, 0)
    verdict_case = cases["host.verdict"]
    assert verdict_case.system_out == "WARN: the gate would refuse this host (this run reports only: gpufleet_gate is false): " + reason
    assert 'name="gate" value="refused"' in verdict_case.tostring().decode()
    totals = JUnitXml.fromstring(text.encode("utf-8"))
    assert (totals.failures, totals.errors) == (0, 0)


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("verdict, result", [("fail", Failure), ("error", Error), ("unreachable", Error), ("not_validated", Failure)])
def test_junit_fails_a_fail_error_unreachable_or_not_validated_host_whether_gated_or_not(gated, verdict, result):
    """A host whose verdict is a gating one fails junit.xml whatever the gate, also when no check of it fails."""
    checks = [Check(id="health.pcie_link_width", host="h", probe="health", status="warn", reason="x8 of x16")]
    judgement = FleetJudgement("r1", {"h": HostVerdict("h", verdict, ["the judge says %s" % verdict], checks)})
    (suite,) = _suites(junit_xml(judgement, gated=gated)).values()
    failing = [case for case in suite if not case.is_passed]
    assert failing and all(isinstance(case.result[0], result) for case in failing)
    assert suite.failures + suite.errors == len(failing)


def test_junit_passes_an_ordinary_warn_host_whether_gated_or_not():
    checks = [Check(id="health.pcie_link_width", host="h", probe="health", status="warn", reason="x8 of x16")]
    judgement = FleetJudgement("r1", {"h": HostVerdict("h", "warn", ["x8 of x16"], checks)})
    for gated in (False, True):
        (suite,) = _suites(junit_xml(judgement, gated=gated)).values()
        assert [case.name for case in suite] == ["health.pcie_link_width"] and (suite.failures, suite.errors) == (0, 0)


def test_render_run_hands_the_gate_to_junit(judged):
    """render_run(gated=...) is what the report action passes from the role's gpufleet_gate (roles/report/tasks/main.yml)."""
    no_gpu, reason = _no_gpu_host()
    outcomes = {}
    for gated in (False, True):
        judgement = dataclasses.replace(judged.judgement, hosts=dict(judged.judgement.hosts, **no_gpu.hosts))
        written = Written()
        render_run(str(judged.run_dir), judged.expected, judged.groups, written.__setitem__, judgement=judgement, gated=gated)
        (junit,) = [text for path, text in written.items() if path.endswith("junit.xml")]
        (case,) = [case for case in _suites(junit)["cpu-only"] if case.name == "host.verdict"]
        outcomes[gated] = case
    assert outcomes[False].is_passed and reason in outcomes[False].system_out
    assert isinstance(outcomes[True].result[0], Failure) and outcomes[True].result[0].message == reason


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_the_report_role_gates_junit_where_it_gates_the_play():
    """The role hands the report the same condition under which its gate task fails the play."""
    with open(os.path.join(ROOT, "roles", "report", "tasks", "main.yml"), encoding="utf-8") as handle:
        tasks = yaml.safe_load(handle)
    (report,) = [task for task in tasks if "gpufleet.validation.report" in task]
    gates = [task for task in tasks if "gate" in task["name"].lower() or "gate refused" in str(task.get("vars"))]
    condition = "report_gate | bool"
    assert report["gpufleet.validation.report"]["gated"] == "{{ %s }}" % condition
    # every task that says or enforces the gate decides it by the same condition
    assert gates and all(condition in str(task.get("vars", "")) + str(task.get("when", "")) for task in gates)


REPORTS_DOC = os.path.join(ROOT, "docs", "reports.md")
JUNIT_RESULTS = {"failure": Failure, "error": Error, "skipped": Skipped}


def test_docs_reports_says_what_junit_xml_holds():
    """docs/reports.md's junit.xml row ("fail → failure, ...") and its host.verdict section are what the writer does."""
    with open(REPORTS_DOC, encoding="utf-8") as handle:
        doc = handle.read()
    (row,) = [line for line in doc.splitlines() if line.startswith("| `<run>/junit.xml`")]
    mapping = dict(re.findall(r"(pass|warn|fail|error|skip) → (failure|error|skipped|passed)", row))
    assert set(mapping) == {"fail", "error", "skip", "warn"}, row
    for status, outcome in mapping.items():
        check = Check(id="x.y", host="h", probe="x", status=status, reason="the reason of %s" % status)
        (suite,) = _suites(junit_xml(FleetJudgement("r1", {"h": HostVerdict("h", "pass", [], [check])}))).values()
        (case,) = list(suite)
        if outcome == "passed":
            assert case.is_passed and (status != "warn" or "the reason of warn" in case.system_out), status
        else:
            assert isinstance(case.result[0], JUNIT_RESULTS[outcome]), status
    assert "`host.verdict`" in row and "### JUnit and the gate" in doc
    judgement, _reason = _no_gpu_host()
    (verdict_case,) = [case for case in _suites(junit_xml(judgement, gated=False)).popitem()[1] if case.name == "host.verdict"]
    shown = verdict_case.system_out.split(": host.gpu_measured")[0]
    assert '"%s: …"' % shown in doc, shown
    assert 'name="gate" value="refused"' in verdict_case.tostring().decode()
    assert '<property name="gate" value="refused"/>' in doc


def test_people_read_chosen_digits_and_machines_every_digit():
    """A judged check's reason, which is the JUnit message and the report's terminal line, and the JUnit details choose
    their digits (number_format.py); fleet.json and the Prometheus textfile keep the floats as the judge holds them."""
    rule = {"id": "membw.bandwidth", "probe": "membw", "check": "bandwidth", "severity": "fail",
            "params": {"known_good": "copy", "fail_below_pct": 85, "warn_below_pct": 95}}
    baseline = {"id": "toy", "known_good": {"copy": {"value": 5100.25, "unit": "GB/s", "source": "a toy rig"}}}
    measurement = Measurement("membw.bandwidth_gbps", "GB/s", "higher", Device("cuda", 0, "GPU-8eb0778b-d464"), "the copy",
                              value=4244.391, samples=(4232.862, 4244.391, 4280.517))
    [check] = judge_measurements("h", rule, RuleContext(host="h", sku="toy", baseline=baseline), [measurement])
    assert check.status == "fail" and (check.value, check.reference) == (4244.391, 5100.25)
    assert check.reason == ("GPU 0 (GPU-8eb0778b): the copy 4244 GB/s, 83.2 % of the known-good 5100 GB/s; median of 3 "
                            "repeats (4233-4281 GB/s, spread 1.12 %); below 85 % fails")
    judgement = FleetJudgement("r1", {"h": HostVerdict("h", "fail", ["%s: %s" % (check.id, check.reason)], [check])})
    (case,) = list(_suites(junit_xml(judgement))["h"])
    failure = case.result[0]
    assert failure.message == check.reason
    assert "value: 4244 GB/s" in failure.text and "reference: 5100 GB/s (" in failure.text and "4244.391" not in failure.text
    document = json.loads(json.dumps(fleet_json(judgement, None)))
    (stored,) = document["hosts"]["h"]["checks"]
    assert (stored["value"], stored["reference"]) == (4244.391, 5100.25)
    unused_families, samples = _samples(prometheus_text(judgement, None, 0))
    assert samples[_key("gpufleet_check_value", host="h", check="membw.bandwidth", gpu="0", unit="GB/s")] == 4244.391


# ---------------------------------------------------------------- rules that matched nothing, and the run's warnings

def _exports(run, judgement):
    """fleet.json, junit.xml and gpufleet.prom as render_run writes them, and index.md."""
    written = Written()
    render_run(str(run.run_dir), run.expected, run.groups, written.__setitem__, judgement=judgement, loaded=run.run)
    root = os.path.realpath(str(run.run_dir))
    return {os.path.relpath(path, root): text for path, text in written.items()}


def test_a_quick_runs_rules_of_probes_it_does_not_run_are_no_finding_in_any_export(judge_recorded):
    """Issue 46: a healthy quick run exported gpufleet_unmatched_rules 40 (every rule of the probes quick does not run),
    and junit.xml a suite of 40 skipped cases for them."""
    run = judge_recorded(RECORDED_QUICK_RUN)
    judgement = run.judgement
    not_run = [check for check in judgement.unmatched_rules if check.probe in ("gemm", "load", "p2p")]
    assert judgement.hosts["localhost"].verdict == "pass" and not_run and all(check.status == "skip" for check in not_run)
    exports = _exports(run, judgement)
    unused_families, samples = _samples(exports["gpufleet.prom"])
    assert samples[_key("gpufleet_unmatched_rules")] == 0
    assert not [key for key in samples if key[0] == "gpufleet_run_warnings"]
    suites = _suites(exports["junit.xml"])
    assert list(suites) == ["localhost"]
    host_skips = sum(1 for check in judgement.hosts["localhost"].checks if check.status == "skip")
    assert JUnitXml.fromstring(exports["junit.xml"].encode("utf-8")).skipped == host_skips
    document = json.loads(exports["fleet.json"])
    assert not list(_validator().iter_errors(document))
    assert [entry["id"] for entry in document["unmatched_rules"]] == [check.id for check in judgement.unmatched_rules]
    assert {entry["kind"] for entry in document["unmatched_rules"]} == {"not_run_by_profile"}
    # the index folds the same rules into its one line
    assert "not run by profile quick: %d rules of probes" % len(judgement.unmatched_rules) in exports["index.md"]


def _typo_rules_and_broken_baselines(tmp_path):
    """A rules file: the shipped rules and a warn rule of health whose path (allowed by the schema) no result of the
    recorded run holds; a baselines folder: the shipped files and a broken one."""
    with open(os.path.join(ROOT, "docs", "rules.yaml"), encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    document["rules"].append({"id": "health.mig_reason_typo", "probe": "health", "check": "field_equals", "severity": "warn",
                              "params": {"path": "gpus[].mig_mode.unavailable", "expected": "x"}, "description": "a typo"})
    rules_path = tmp_path / "rules.yaml"
    rules_path.write_text(yaml.safe_dump(document))
    baselines = tmp_path / "baselines"
    shutil.copytree(os.path.join(ROOT, "baselines"), baselines)
    (baselines / "broken.yaml").write_text("id: broken\nmatch: {name_regex: [unclosed\n")
    return str(rules_path), str(baselines)


def test_a_rule_of_a_probe_the_profile_runs_that_matched_nothing_counts_and_warnings_about_the_run_stand_apart(judge_recorded, tmp_path):
    rules_path, baselines = _typo_rules_and_broken_baselines(tmp_path)
    run = judge_recorded(RECORDED_QUICK_RUN, rules_path=rules_path, baselines_dir=baselines)
    kinds = {check.id: (check.status, check.probe) for check in run.judgement.unmatched_rules if check.probe not in ("gemm", "load", "p2p")}
    assert kinds["health.mig_reason_typo"] == ("warn", "health") and kinds["baselines.load"] == ("error", "")
    assert kinds["baselines.replaced"] == ("warn", "")
    exports = _exports(run, run.judgement)
    unused_families, samples = _samples(exports["gpufleet.prom"])
    assert samples[_key("gpufleet_unmatched_rules")] == 1
    assert samples[_key("gpufleet_run_warnings", check="baselines.load")] == 1
    assert samples[_key("gpufleet_run_warnings", check="baselines.replaced")] == 1
    suites = _suites(exports["junit.xml"])
    assert list(suites) == ["localhost", "(rules that matched nothing)", "(run warnings)"]
    (typo,) = list(suites["(rules that matched nothing)"])
    assert (typo.name, typo.classname) == ("health.mig_reason_typo", "gpufleet.rules") and typo.is_passed and "WARN" in typo.system_out
    warnings = {case.name: case for case in suites["(run warnings)"]}
    assert set(warnings) == {"baselines.load", "baselines.replaced"}
    assert isinstance(warnings["baselines.load"].result[0], Error) and "broken.yaml" in warnings["baselines.load"].result[0].message
    assert warnings["baselines.replaced"].is_passed and warnings["baselines.replaced"].classname == "gpufleet.run"
    document = json.loads(exports["fleet.json"])
    assert not list(_validator().iter_errors(document))
    kind = {entry["id"]: entry["kind"] for entry in document["unmatched_rules"]}
    assert kind.pop("health.mig_reason_typo") == "matched_nothing"
    assert kind.pop("baselines.load") == kind.pop("baselines.replaced") == "run_warning"
    assert set(kind.values()) == {"not_run_by_profile"}


def test_every_family_the_prometheus_file_holds_is_documented(judged):
    with open(REPORTS_DOC, encoding="utf-8") as handle:
        doc = handle.read()
    families = re.findall(r"^# TYPE (\S+) gauge$", prometheus_text(judged.judgement, None, 0), flags=re.M)
    assert "gpufleet_unmatched_rules" in families
    assert [name for name in families if "`%s" % name not in doc] == []
