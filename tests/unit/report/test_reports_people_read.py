"""Issue 17: the first screen of each page says what to do, and noise is folded, not deleted.

Rendered from the rig's real recorded runs (docs/examples/h200x1): the 1-GPU H200 acceptance run and a post_upgrade run
with its previous run beside it.
"""
from __future__ import annotations

import json
import os
import re
import shutil

import jinja2
import pytest
import yaml

from ansible_collections.gpufleet.validation.plugins.module_utils.open_run_spec import RUN_ARGUMENT_SPEC
from ansible_collections.gpufleet.validation.plugins.action.report import judged_overrides
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Check, FleetJudgement, HostVerdict
from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import profile_probes
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.verdicts import (
    fold_unmatched, headline, peer_fold, verdict_counts)
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from report_writes import Written  # noqa: E402  pylint: disable=import-error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLES = os.path.join(ROOT, "docs", "examples", "h200x1")
ACCEPTANCE = ("issue35/cuts", "20261204T121144Z-595230")
# recorded before tuning and memtest existed: its index still lists and folds the rules those probes would match
HOUSE = ("house", "20261201T162442Z-398261")
POST_UPGRADE = ("tuning", "20261201T181904Z-835239")
HIDDEN_GPU = ("final", "20261201T091043Z-857640")   # CUDA_VISIBLE_DEVICES hid the GPU: the measurement probes end in error


def _rendered(tmp_path, folder, run_id):
    copy = tmp_path / folder
    shutil.copytree(os.path.join(EXAMPLES, folder), str(copy), symlinks=True)
    path = os.path.join(str(copy), run_id)
    hosts = sorted(name for name in os.listdir(path) if os.path.isdir(os.path.join(path, name)))
    run = load_run(path, hosts, {})
    judgement = judge_run(run, str(copy), judged_overrides(run, {}))
    written = Written()
    render_run(path, hosts, {}, written.__setitem__, judgement=judgement, loaded=run)
    return {os.path.relpath(name, path): text for name, text in written.items()}


@pytest.fixture(scope="module")
def acceptance(tmp_path_factory):
    return _rendered(tmp_path_factory.mktemp("acceptance"), *ACCEPTANCE)


@pytest.fixture(scope="module")
def house(tmp_path_factory):
    return _rendered(tmp_path_factory.mktemp("house"), *HOUSE)


@pytest.fixture(scope="module")
def post_upgrade(tmp_path_factory):
    return _rendered(tmp_path_factory.mktemp("post_upgrade"), *POST_UPGRADE)


def test_the_index_counts_hosts_in_correct_plurals():
    assert headline(verdict_counts(["pass"])) == "1 host: 1 passed."
    assert headline(verdict_counts(["fail", "pass", "pass"])) == "3 hosts: 1 failed, 2 passed."
    assert headline(verdict_counts([])) == "0 hosts."


def test_the_index_of_one_host_says_1_host_and_what_to_do_first(acceptance):
    page, markdown = acceptance["index.html"], acceptance["index.md"]
    assert "1 hosts" not in page and "1 hosts" not in markdown
    assert "<strong>1 host: 1 passed.</strong>" in page
    assert page.index('<h2 id="todo">What to do</h2>') < page.index("<h2>Hosts, worst first</h2>")
    assert "Nothing: every host passed." in markdown.split("## Hosts", 1)[0]


def test_metric_columns_are_headed_by_their_title_and_unit_with_the_id_as_tooltip(acceptance):
    page = acceptance["index.html"]
    assert "health.cuda_init_s (s)" not in page
    # the id in the tooltip, not under the title: a column as narrow as its values (issue 31: the table fits 1280 px)
    assert '<th title="health.cuda_init_s">CUDA init time (s)</th>' in page
    assert "| host | verdict | machine | BF16 matmul (burst) (TFLOP/s) |" in acceptance["index.md"]


def test_rules_of_probes_the_profile_does_not_run_fold_into_one_line(house):
    markdown = house["index.md"]
    section = markdown.split("## Rules that matched nothing", 1)[1].split("## Fleet statistics", 1)[0]
    # collective_hosts is not in the acceptance profile: folded; tuning is (this run was recorded before it existed): listed.
    assert "collective\\_hosts.verified" not in section and "(tuning.acs\\_redirect)" in section
    # every rule of the probes outside the profile, however many the rules file has (a new probe's rules included)
    with open(os.path.join(ROOT, "docs", "rules.yaml"), encoding="utf-8") as handle:
        rules = yaml.safe_load(handle)["rules"]
    # (the trend checks' rules, probe history, read the run index, not a probe's result: never unmatched)
    outside = sorted({rule["probe"] for rule in rules} - set(profile_probes("acceptance")) - {"history"})
    count = sum(1 for rule in rules if rule["probe"] in outside)
    line = "\nnot run by profile acceptance: %d rule%s of probe%s %s; " % (
        count, "" if count == 1 else "s", "" if len(outside) == 1 else "s", ", ".join(name.replace("_", "\\_") for name in outside))
    assert line in section


def test_fold_unmatched_keeps_rules_of_probes_the_profile_runs_and_folds_the_rest():
    unmatched = [Check(id="gemm.bf16_burst", host="", probe="gemm", status="skip", reason="no data"),
                 Check(id="p2p.pairs", host="", probe="p2p", status="skip", reason="no data"),
                 Check(id="health.typo", host="", probe="health", status="warn", reason="found no field"),
                 Check(id="membw.bandwidth", host="", probe="membw", status="skip", reason="no data")]
    listed, line = fold_unmatched(unmatched, "quick", ["health", "membw"])
    assert [row["id"] for row in listed] == ["health.typo", "membw.bandwidth"]
    assert line == "not run by profile quick: 2 rules of probes gemm, p2p"
    listed, line = fold_unmatched(unmatched, "mine", None)
    assert [row["id"] for row in listed] == ["health.typo"] and line.startswith("not run in this run (profile mine): 3 rules")


def test_rules_of_a_probe_that_ran_but_measured_on_no_host_fold_into_one_line():
    unmatched = [Check(id="p2p.pairs", host="", probe="p2p", status="skip", reason="no data"),
                 Check(id="p2p.small_copy", host="", probe="p2p", status="skip", reason="no data"),
                 Check(id="membw.bandwidth", host="", probe="membw", status="skip", reason="no data")]
    listed, line = fold_unmatched(unmatched, "acceptance", ["health", "membw", "p2p"], unmeasured={"p2p": "unavailable"})
    assert [row["id"] for row in listed] == ["membw.bandwidth"]
    assert line == "not measured on any host: 2 rules of probe p2p (unavailable)"


def test_the_one_gpu_acceptance_index_lists_no_p2p_rule_as_matching_nothing(acceptance):
    index = acceptance["index.md"]
    section = index.split("## Rules that matched nothing", 1)[1].split("\n## ", 1)[0]
    assert "p2p." not in section.replace("probe p2p", "")
    assert "not measured on any host:" in section and "p2p (unavailable)" in section


def test_the_one_gpu_acceptance_exports_count_no_rule_of_a_probe_that_measured_on_no_host(acceptance):
    """Issue 46: the exports sort the unmatched rules as the index does: p2p's (unavailable on one GPU) are no finding."""
    unmatched = json.loads(acceptance["fleet.json"])["unmatched_rules"]
    kinds = {entry["kind"] for entry in unmatched if entry["probe"] == "p2p"}
    assert kinds == {"not_measured"}
    matched_nothing = [entry["id"] for entry in unmatched if entry["kind"] == "matched_nothing"]
    assert "\ngpufleet_unmatched_rules %d\n" % len(matched_nothing) in acceptance["gpufleet.prom"]
    assert 'classname="gpufleet.rules" name="p2p.' not in acceptance["junit.xml"]


def test_the_dossier_opens_with_the_verdict_then_what_to_do_then_everything_else(acceptance):
    markdown = acceptance["localhost/dossier.md"]
    order = [markdown.index(marker) for marker in ("# Host localhost: pass", "## What to do", "| SKU | h200-sxm |",
                                                   "## Other checks", "## Probe results")]
    assert order == sorted(order)
    assert "| pass | GPUs visible (health.gpu\\_count) |" in markdown


def test_peer_comparisons_without_enough_hosts_fold_into_one_line(house):
    markdown, page = house["localhost/dossier.md"], house["localhost/dossier.html"]
    checks = markdown.split("## Other checks", 1)[1].split("## Probe results", 1)[0]
    assert "not enough peers" not in checks
    assert "compared with peers: needs ≥ 3 hosts of the SKU, this run has 1 (14 checks not compared: fleet.gemm.bf16\\_burst\\_tflops" \
        in checks
    assert "<details><summary>compared with peers: needs ≥ 3 hosts of the SKU, this run has 1 (14 checks not compared)</summary>" in page


def test_peer_fold_leaves_compared_checks_and_other_skips():
    checks = [Check(id="fleet.health.idle_power_w", host="h", probe="health", status="skip",
                    reason="health.idle_power_w not compared across the fleet (group x): not enough peers: 2 value(s), at least 3 needed"),
              Check(id="fleet.health.temperature_c", host="h", probe="health", status="pass", reason="within"),
              Check(id="health.retired_pages", host="h", probe="health", status="skip", reason="not supported")]
    kept, line = peer_fold(checks, 2)
    assert [check.id for check in kept] == ["fleet.health.temperature_c", "health.retired_pages"]
    assert line == {"text": "compared with peers: needs ≥ 3 hosts of the SKU, this run has 2", "count": 1,
                    "ids": ["fleet.health.idle_power_w"]}


@pytest.fixture(scope="module")
def hidden_gpu(tmp_path_factory):
    return _rendered(tmp_path_factory.mktemp("hidden"), *HIDDEN_GPU)


def test_no_every_field_was_read_under_a_probe_that_is_not_ok(hidden_gpu):
    markdown = hidden_gpu["localhost/dossier.md"]
    sections = dict(re.findall(r"\n## Probe ([a-z_]+): [a-z]+\n(.*?)(?=\n## Probe |\Z)", markdown, re.S))
    statuses = dict(re.findall(r"\n## Probe ([a-z_]+): ([a-z]+)\n", markdown))
    assert statuses["membw"] == "error" and statuses["health"] == "ok"
    for probe, section in sections.items():
        unavailable = section.split("### Unavailable fields", 1)[1].split("###", 1)[0]
        if statuses[probe] != "ok":
            assert "Every field was read." not in unavailable, probe
    membw = sections["membw"].split("### Unavailable fields", 1)[1].split("###", 1)[0]
    assert "None listed: the probe's status is error (" in membw


def test_an_unchanged_kernel_command_line_is_shown_once(post_upgrade):
    page, markdown = post_upgrade["localhost/dossier.html"], post_upgrade["localhost/dossier.md"]
    cmdline = re.search(r"mitigations=auto[^<|]*", page).group(0)
    assert len(cmdline) > 500
    changes = page.split('<h2 id="changes">', 1)[1].split('<h2 id="checks">', 1)[0]
    assert changes.count(cmdline) == 1 and "unchanged: <details><summary>" in changes
    checks = page.split('<h2 id="checks">', 1)[1].split("<h2>Probe results</h2>", 1)[0]
    assert checks.count(cmdline) == 1
    row = [line for line in markdown.splitlines() if "(drift.kernel\\_cmdline)" in line or "(kernel\\_cmdline)" in line]
    assert len(row) == 2 and all(line.count("mitigations=auto") == 1 for line in row)


def test_the_index_reasons_cell_is_one_line():
    verdict = HostVerdict("h", "fail", ["a.b: reason %d" % number for number in range(20)],
                          [Check(id="a.b", host="h", probe="a", status="fail", reason="reason %d" % number) for number in range(20)])
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.verdicts import shown_reasons
    assert shown_reasons(verdict.reasons) == (["a.b: reason 0"], 19)
    assert FleetJudgement("r", {"h": verdict}).texts.of("a.b").title == "a: b"


def _check_mode_message(check_mode: bool) -> str:
    with open(os.path.join(ROOT, "playbooks", "validate.yml"), encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    task = [task for task in plays[0]["tasks"] if task["name"].startswith("Say where this run's results go")][0]
    template = jinja2.Environment().from_string(task["ansible.builtin.debug"]["msg"])
    # What open_run returns when gpufleet_results_dir is not set: its argument spec's default.
    opened = {"results_dir": RUN_ARGUMENT_SPEC["results_dir"]["default"]}
    return template.render(ansible_check_mode=check_mode, gpufleet_run_id="20261201T000000Z-000001", gpufleet_opened_run=opened)


def test_check_mode_says_nothing_is_written():
    assert _check_mode_message(True) == ("check mode: nothing is probed or written; a real run would write "
                                         "results/20261201T000000Z-000001")
    assert _check_mode_message(False) == "run 20261201T000000Z-000001: results in results/20261201T000000Z-000001"


def test_the_dossier_says_what_the_pass_proves_and_what_one_gpu_is_not_promised(acceptance):
    """Issue 44: a pass names what it proves; the headlines measured between GPUs are not promised on one GPU, said once."""
    markdown = acceptance["localhost/dossier.md"]
    top = markdown.split("## What to do", 1)[0]
    assert "## What a pass proves here" in top and "**Proven** (13): CUDA initialises" in top and "Not proven" not in top
    (line,) = [line for line in top.splitlines() if line.startswith("Not promised on this host: ")]
    assert line.count("measured between GPUs: this host has 1 GPU") == 1, line
    assert "Refused by the gate" not in top


def test_the_machine_cell_says_a_missing_drivers_reason_once():
    """Issue 46: a host without a driver read the same long reason twice in its machine cell, as model and as driver."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.probes.health.machine_facts import index_columns

    path = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "health_h200x2_unavailable_without_pynvml.json")
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle)["data"]
    columns = index_columns(data)
    assert "nvidia-ml-py is not installed" in columns["gpus"]
    assert columns["driver"] == "unavailable for the same reason"
    data["software"]["driver_version"] = {"unavailable": "the driver's version file is unreadable"}
    assert index_columns(data)["driver"] == "the driver's version file is unreadable"


def test_headlines_left_unproven_in_the_same_words_share_one_line():
    """Issue 46: a machine without GPUs listed 13 unproven headlines, each with the same long reason of its probe."""
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import Proof
    from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.verdicts import proofs_view

    gemm = "the gemm probe ended unavailable: nothing to measure: this host has no NVIDIA GPU (PCI: 0 NVIDIA GPU(s))"
    fix = "see host.gpu_measured, the root cause"
    proofs = [Proof("gemm.bf16_burst", "gemm", "not_proven", gemm, fix, "host.gpu_measured"),
              Proof("membw.bandwidth", "membw", "not_proven", "1413 GB/s, 46 % of the known-good", fix, "host.gpu_measured"),
              Proof("gemm.fp8_burst", "gemm", "not_proven", gemm, fix, "host.gpu_measured"),
              Proof("health.gpu_count", "health", "proven", "1 check judged")]
    verdict = HostVerdict(host="h", verdict="not_validated", reasons=[], checks=[], sku=None, sku_reason="", groups=[],
                          proofs=proofs)
    lines = proofs_view(verdict)["not_proven_by_reason"]
    assert [line["checks"] for line in lines] == [["gemm.bf16_burst", "gemm.fp8_burst"], ["membw.bandwidth"]]
    assert lines[0]["because"] == gemm and lines[0]["fix"] == fix and len(lines[0]["titles"]) == 2
