"""Issue 44: a user's baselines folder whose h200-sxm.yaml shadows the shipped one with weaker numbers. Before, the
check's source still read "baselines/h200-sxm.yaml ... this project's reference measurement" and the user's folder was
named nowhere; now every check that uses it names its folder and file, and the run says which shipped ids it replaced
(fleet.json's unmatched_rules, the index)."""
from __future__ import annotations

import json
import os
import shutil

import yaml

from ansible_collections.gpufleet.validation.plugins.action.report import judged_overrides
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from report_writes import Written  # noqa: E402  pylint: disable=import-error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RECORDED = os.path.join(ROOT, "docs", "examples", "h200x1", "issue33", "final", "20261203T171323Z-628287")
RUN_ID = "20261203T171323Z-628287"


def test_a_users_weaker_h200_file_is_named_in_the_check_and_in_the_run(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(RECORDED, results / RUN_ID)
    mine = tmp_path / "my-baselines"
    shutil.copytree(os.path.join(ROOT, "baselines"), mine)
    document = yaml.safe_load((mine / "h200-sxm.yaml").read_text())
    document["known_good"]["torch_copy_4gib"]["value"] = 2000.0
    document["known_good"]["torch_copy_4gib"]["measured"]["machines"] = [2000.0]
    (mine / "h200-sxm.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    run = load_run(str(results / RUN_ID), ["localhost"], {})
    judgement = judge_run(run, str(results), judged_overrides(run, {}), baselines_dir=str(mine))
    [copy_rate] = [check for check in judgement.hosts["localhost"].checks if check.id == "membw.bandwidth"]
    assert copy_rate.reference == 2000.0
    assert copy_rate.reference_source.startswith("%s (gpufleet_baselines_dir, in place of the shipped baselines/h200-sxm.yaml) "
                                                 "known_good.torch_copy_4gib" % (mine / "h200-sxm.yaml"))
    replaced = [check for check in judgement.unmatched_rules if check.id == "baselines.replaced"]
    assert [check.status for check in replaced] == ["warn", "warn"]
    assert replaced[0].reason.startswith("%s (gpufleet_baselines_dir) replaces the collection's baselines/h200-sxm.yaml and "
                                         "differs from it" % (mine / "h200-sxm.yaml"))
    written = Written()
    render_run(str(results / RUN_ID), ["localhost"], {}, written.__setitem__, judgement=judgement, loaded=run)
    pages = {os.path.relpath(name, str(results / RUN_ID)): text for name, text in written.items()}
    fleet = json.loads(pages["fleet.json"])
    assert [check["reason"] for check in fleet["unmatched_rules"] if check["id"] == "baselines.replaced"] == [check.reason for check in replaced]
    assert "replaces the collection&#39;s baselines/h200-sxm.yaml and differs from it" in pages["index.html"]
    assert "replaces the collection's baselines/h200-sxm.yaml" in pages["index.md"]


def test_the_shipped_folder_replaces_nothing(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(RECORDED, results / RUN_ID)
    run = load_run(str(results / RUN_ID), ["localhost"], {})
    judgement = judge_run(run, str(results), judged_overrides(run, {}))
    assert not [check for check in judgement.unmatched_rules if check.id == "baselines.replaced"]
    [copy_rate] = [check for check in judgement.hosts["localhost"].checks if check.id == "membw.bandwidth"]
    assert copy_rate.reference_source.startswith("baselines/h200-sxm.yaml known_good.torch_copy_4gib (this project's")
