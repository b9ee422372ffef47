"""Issue 31: the first post_upgrade run after a health run showed no before/after rows for the probes the health run does
not have, and said nothing about why.

Each probe is now compared with the newest earlier run of the host that measured it (store/previous.py), and a probe
that no earlier run measured is named in the dossier's before-and-after section, in place of the table when nothing at
all was compared. Rendered from the rig's recorded runs (docs/examples/h200x1): a health run, and post_upgrade runs
(the first with vm.swappiness 60, the second with 10) given later run ids.
"""
from __future__ import annotations

import json
import os
import shutil

from ansible_collections.gpufleet.validation.plugins.action.report import judged_overrides
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from report_writes import Written  # noqa: E402  pylint: disable=import-error

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLES = os.path.join(ROOT, "docs", "examples", "h200x1")
HEALTH = ("discovery", "20261202T003914Z-350544")            # profile health: health.json only
POST_UPGRADE_BEFORE = ("tuning", "20261201T181828Z-634765")  # health, membw, p2p, toolchain, tuning; swappiness 60
POST_UPGRADE = ("tuning", "20261201T181904Z-835239")         # the same after vm.swappiness 60 -> 10
OLDER_ID = "20261130T000000Z-634765"                         # before the health run
CURRENT_ID = "20261203T000000Z-835239"                       # after it
NOT_COMPARED = "no earlier run of this host measured membw, tuning: not compared."


def _copy_run(results, recorded, run_id=None):
    """The recorded run in results under run_id (its own by default), every run_id it records rewritten to match."""
    folder, recorded_id = recorded
    run_id = run_id or recorded_id
    target = os.path.join(str(results), run_id)
    shutil.copytree(os.path.join(EXAMPLES, folder, recorded_id), target, symlinks=True)
    for place, _dirs, files in os.walk(target):
        for name in files:
            if not name.endswith(".json"):
                continue
            path = os.path.join(place, name)
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
            if isinstance(document, dict) and "run_id" in document:
                document["run_id"] = run_id
                with open(path, "w", encoding="utf-8") as handle:
                    json.dump(document, handle)
    return run_id


def _dossiers(results, run_id):
    path = os.path.join(str(results), run_id)
    run = load_run(path, ["localhost"], {})
    judgement = judge_run(run, str(results), judged_overrides(run, {}))
    written = Written()
    render_run(path, ["localhost"], {}, written.__setitem__, judgement=judgement, loaded=run)
    pages = {os.path.relpath(name, path): text for name, text in written.items()}
    html = pages["localhost/dossier.html"]
    markdown = pages["localhost/dossier.md"]
    changes_html = html.split('<h2 id="changes">', 1)[1].split('<h2 id="checks">', 1)[0] if '<h2 id="changes">' in html else ""
    changes_md = markdown.split("\n## Since ", 1)[-1] if "\n## Since " in markdown else markdown.split("\n## Before and after", 1)[-1]
    return judgement.hosts["localhost"], changes_html, changes_md.split("\n## Other checks", 1)[0]


def test_a_post_upgrade_run_after_a_health_run_compares_health_and_says_which_probes_it_could_not(tmp_path):
    _copy_run(tmp_path, HEALTH)
    current = _copy_run(tmp_path, POST_UPGRADE, CURRENT_ID)
    verdict, html, markdown = _dossiers(tmp_path, current)
    assert html.startswith("Since run %s: before and after</h2>" % HEALTH[1]), html[:200]
    assert '<p class="muted">%s</p>' % NOT_COMPARED in html
    assert "<table" in html and "kernel_release" in html  # health's rows are there
    assert markdown.startswith("run %s: before and after\n\n%s\n\n| what |" % (HEALTH[1], NOT_COMPARED)), markdown[:300]
    assert [check.reason for check in verdict.checks if check.id == "drift.previous_run"] == [NOT_COMPARED[:-1]]
    assert not [check for check in verdict.checks if check.id.startswith("drift.membw") or check.id.startswith("drift.tuning")]


def test_each_probe_is_compared_with_the_newest_earlier_run_that_measured_it(tmp_path):
    older = _copy_run(tmp_path, POST_UPGRADE_BEFORE, OLDER_ID)
    _copy_run(tmp_path, HEALTH)
    current = _copy_run(tmp_path, POST_UPGRADE, CURRENT_ID)
    verdict, html, markdown = _dossiers(tmp_path, current)
    heading = "Since run %s (health), run %s (membw, tuning): before and after" % (HEALTH[1], older)
    assert html.startswith(heading + "</h2>"), html[:300]
    assert markdown.startswith(heading[len("Since "):]), markdown[:300]
    assert "not compared" not in html and "drift.previous_run" not in [check.id for check in verdict.checks]
    drift = {check.id: check for check in verdict.checks if check.id.startswith("drift.") and check.gpu_index in (None, 0)}
    assert drift["drift.membw.bandwidth_gbps"].reference_source == "run %s" % older
    assert drift["drift.kernel_release"].reference_source == "run %s" % HEALTH[1]
    swappiness = drift["drift.tuning.vm_swappiness"]
    assert (swappiness.status, swappiness.reference_source) == ("warn", "run %s" % older)
    # The settings changed since the older run, which the membw result is compared with, not since the health run.
    assert drift["drift.membw.bandwidth_gbps"].reason.endswith("; settings changed since that run: tuning.vm_swappiness")
    assert "settings changed" not in drift["drift.health.cuda_init_s"].reason


def test_a_run_with_no_earlier_run_says_so_in_place_of_the_table(tmp_path):
    current = _copy_run(tmp_path, POST_UPGRADE, CURRENT_ID)
    _verdict, html, markdown = _dossiers(tmp_path, current)
    assert html.startswith("Before and after</h2>\n<p class=\"muted\">no earlier run of this host measured anything to compare with.</p>"), html[:200]
    assert "<table" not in html
    assert markdown.startswith("\n\nno earlier run of this host measured anything to compare with.\n"), markdown[:200]
    assert "| what |" not in markdown
