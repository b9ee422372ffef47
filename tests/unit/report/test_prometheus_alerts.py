"""The alerting rules the collection ships (extras/prometheus/gpufleet-alerts.yml) under the real promtool (Debian's
prometheus, installed by scripts/install-system-packages): promtool check rules, and promtool test rules on series
read from the gpufleet.prom that render_run writes for recorded runs judged now (a healthy quick run, a busy GPU's
not_validated run) and for the report tests' hand-judged fleet (hosts that fail, err and are unreachable, a rule that
matched nothing). Skipped only where promtool is absent; GPUFLEET_REQUIRE_PROMTOOL=1 (scripts/test, so CI) makes that
a failure instead."""
import os
import re
import shutil
import subprocess

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.exports import label_value
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from recorded_runs import RECORDED_BUSY_RUN, RECORDED_QUICK_RUN  # noqa: E402  pylint: disable=import-error
from report_writes import Written  # noqa: E402  pylint: disable=import-error
from required_parts import required_program  # pylint: disable=import-error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RULES = os.path.join(ROOT, "extras", "prometheus", "gpufleet-alerts.yml")
PROMTOOL = shutil.which("promtool")
ABSENT = "promtool (Debian's prometheus) is not installed here: apt install prometheus (scripts/install-system-packages installs it)"
# What node_exporter's scrape adds to every series of the textfile.
SCRAPE = {"instance": "gpu-controller:9100", "job": "node"}
# The series hold their value this long (promtool's clock starts at 0), past the stale-run threshold.
MINUTES = 30 * 60
with open(RULES, encoding="utf-8") as _handle:
    ALERTS = {rule["alert"]: rule for group in yaml.safe_load(_handle)["groups"] for rule in group["rules"]}


@pytest.fixture
def promtool():
    return required_program(PROMTOOL, ABSENT, "GPUFLEET_REQUIRE_PROMTOOL")


def _written_prom(run, judgement):
    written = Written()
    render_run(str(run.run_dir), run.expected, run.groups, written.__setitem__, judgement=judgement)
    (text,) = [text for path, text in written.items() if os.path.basename(path) == "gpufleet.prom"]
    return text


def input_series(prom_text):
    """promtool's input_series of every sample of a gpufleet.prom as node_exporter's scrape would give it, each held
    for MINUTES. promtool's clock starts at 0, so the run's start (gpufleet_run_timestamp_seconds) is moved there with it:
    the run started when the test begins."""
    samples = [sample for family in text_string_to_metric_families(prom_text) for sample in family.samples]
    (start,) = [sample.value for sample in samples if sample.name == "gpufleet_run_timestamp_seconds"]
    series = []
    for sample in samples:
        labels = dict(sample.labels, **SCRAPE)
        selector = "%s{%s}" % (sample.name, ",".join('%s="%s"' % (key, label_value(value)) for key, value in sorted(labels.items())))
        value = sample.value - start if sample.name == "gpufleet_run_timestamp_seconds" else sample.value
        series.append({"series": selector, "values": "%r+0x%d" % (float(value), MINUTES)})
    return series


def annotations(alert, labels, value="", duration=""):
    """The alert's annotations as Prometheus renders them: its templates with $labels.x, $value and
    $value | humanizeDuration put in (the only ones the rules use)."""
    rendered = {}
    for key, template in ALERTS[alert]["annotations"].items():
        text = template.replace("{{ $value | humanizeDuration }}", duration).replace("{{ $value }}", value)
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda match: labels[match.group(1)], text)
        assert "{{" not in text, text
        rendered[key] = text
    return rendered


def firing(alert, labels, value="", duration=""):
    """One alert as promtool's exp_alerts states it: every label (the series' and the rule's) and its annotations."""
    labels = dict(labels, **ALERTS[alert].get("labels", {}))
    return {"exp_labels": labels, "exp_annotations": annotations(alert, labels, value, duration)}


def promtool_test(promtool, tmp_path, series, times, fired):
    """promtool test rules on one test group: at each of times (promtool's durations), every alert of the rules file is
    checked, firing the alerts fired[(time, alert name)] gives (firing(...) each) and none where it gives none."""
    tests = [{"eval_time": when, "alertname": name, "exp_alerts": fired.get((when, name), [])} for when in times for name in ALERTS]
    document = {"rule_files": [RULES], "evaluation_interval": "1m",
                "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": tests}]}
    path = tmp_path / "gpufleet-alerts.test.yml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    completed = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "SUCCESS" in completed.stdout, completed.stdout


def test_promtool_checks_the_shipped_rules(promtool):
    completed = subprocess.run([promtool, "check", "rules", RULES], capture_output=True, text=True, timeout=60, check=False)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "SUCCESS: %d rules found" % len(ALERTS) in completed.stdout
    assert set(ALERTS) == {"GpufleetHostFailing", "GpufleetHostNotValidated", "GpufleetRunTooOld", "GpufleetUnmatchedRules"}


def test_a_healthy_quick_run_fires_nothing_until_it_is_older_than_its_schedule(promtool, judge_recorded, tmp_path):
    """Issue 46: the healthy quick run exported gpufleet_unmatched_rules 40 (the rules quick does not run), so an alert
    on it fired every night. Now nothing fires; 26 h after the run started (and 10 minutes), the run is too old."""
    run = judge_recorded(RECORDED_QUICK_RUN)
    prom = _written_prom(run, run.judgement)
    assert "\ngpufleet_unmatched_rules 0\n" in prom and 'gpufleet_host_verdict{host="localhost",verdict="pass"} 1' in prom
    # Prometheus's humanizeDuration of 27 h (97,200 s)
    stale = firing("GpufleetRunTooOld", SCRAPE, duration="1d 3h 0m 0s")
    promtool_test(promtool, tmp_path, input_series(prom), ["10m", "25h", "26h5m", "27h"], {("27h", "GpufleetRunTooOld"): [stale]})


def test_a_host_not_validated_fires_its_alert_with_its_name(promtool, judge_recorded, tmp_path):
    run = judge_recorded(RECORDED_BUSY_RUN)
    assert run.judgement.hosts["localhost"].verdict == "not_validated"
    prom = _written_prom(run, run.judgement)
    host = dict(SCRAPE, host="localhost", verdict="not_validated")
    promtool_test(promtool, tmp_path, input_series(prom), ["4m", "10m"],
                  {("10m", "GpufleetHostNotValidated"): [firing("GpufleetHostNotValidated", host)]})


def test_failing_erring_and_unreachable_hosts_and_a_rule_that_matched_nothing_fire_theirs(promtool, judged, tmp_path):
    """The hand-judged fleet (tests/unit/report/conftest.py): two hosts fail (one of them named with markup), two err,
    one is unreachable; a warn host and the passing hosts fire nothing; gemm.fp8_tflops matched nothing (warn)."""
    prom = _written_prom(judged, judged.judgement)
    failing = sorted((name, verdict.verdict) for name, verdict in judged.judgement.hosts.items()
                     if verdict.verdict in ("fail", "error", "unreachable"))
    assert len(failing) == 5 and (judged.evil_host, "fail") in failing and ("gpu-e01", "unreachable") in failing
    hosts = [firing("GpufleetHostFailing", dict(SCRAPE, host=name, verdict=verdict)) for name, verdict in failing]
    unmatched = firing("GpufleetUnmatchedRules", SCRAPE, value="1")
    promtool_test(promtool, tmp_path, input_series(prom), ["4m", "10m"],
                  {("10m", "GpufleetHostFailing"): hosts, ("10m", "GpufleetUnmatchedRules"): [unmatched]})
