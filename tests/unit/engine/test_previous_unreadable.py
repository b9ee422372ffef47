"""An earlier run that cannot be read makes drift skip with that reason, and is never passed over for an older run
(issue 32). A directory of mode 000 is unreadable by intent: not read even by root, who could read it; an unprivileged
reader gets EACCES (run here in a forked child that drops to nobody, when the tests run as root)."""
from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import find_previous_results
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run

HERE = os.path.dirname(os.path.abspath(__file__))
HEALTH_OK = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "health_h200x2_ok_by_the_action.json")
OLDER, NEWER, CURRENT = "20261128T010000Z-1", "20261129T010000Z-2", "20261130T010000Z-3"
NOBODY = 65534


@pytest.fixture
def results():
    """OLDER and NEWER both measured node-01 and node-02; CURRENT is this run. World-readable, so nobody can read it."""
    root = tempfile.mkdtemp(prefix="gpufleet-previous-")
    os.chmod(root, 0o755)
    for run_id in (OLDER, NEWER, CURRENT):
        for host in ("node-01", "node-02"):
            path = os.path.join(root, run_id, host)
            os.makedirs(path)
            with open(os.path.join(path, "health.json"), "w", encoding="utf-8") as handle:
                json.dump({"status": "ok", "run_id": run_id, "probe": "health"}, handle)
    for folder, subfolders, files in os.walk(root):
        for name in subfolders:
            os.chmod(os.path.join(folder, name), 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    yield root
    for folder, subfolders, unused_files in os.walk(root):
        for name in subfolders:
            os.chmod(os.path.join(folder, name), 0o755)
    shutil.rmtree(root)


def _unprivileged(job):
    """job() run as an unprivileged user: in a forked child that drops to nobody when this is root."""
    if os.geteuid() != 0:
        return job()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(reader)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(writer, json.dumps(job()).encode("utf-8"))
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as handle:
        answer = handle.read()
    os.waitpid(pid, 0)
    return json.loads(answer)


def _found(root):
    found = find_previous_results(root, CURRENT, ["node-01", "node-02"], wanted={"node-01": ["health"], "node-02": ["health"]})
    return {"run_ids": found.run_ids, "problems": found.problems,
            "envelopes": {host: sorted(envelopes) for host, envelopes in found.envelopes.items()}}


@pytest.mark.parametrize("unprivileged", [True, False], ids=["unprivileged", "as-this-user"])
def test_an_earlier_run_of_mode_000_is_unreadable_for_everyone_and_no_older_run_is_read(results, unprivileged):
    os.chmod(os.path.join(results, NEWER), 0)
    found = _unprivileged(lambda: _found(results)) if unprivileged else _found(results)
    assert found["run_ids"] == {"node-01": NEWER, "node-02": NEWER}
    assert found["envelopes"] == {"node-01": [], "node-02": []}
    for host in ("node-01", "node-02"):
        reason = found["problems"][host]["health"]
        assert reason.startswith("the earlier run %s is unreadable: " % NEWER), reason
        assert "has mode 000: made unreadable on purpose" in reason and "nor with an older run" in reason, reason


def test_a_host_that_measured_nothing_has_the_describing_probe_its_caller_names_say_why(results):
    """Issue 47: the store knows no probe; the caller names the one that describes the machine."""
    os.chmod(os.path.join(results, NEWER), 0)
    named = find_previous_results(results, CURRENT, ["node-01"], wanted={"node-01": []}, describing="inventory")
    unnamed = find_previous_results(results, CURRENT, ["node-01"], wanted={"node-01": []})
    assert list(named.problems["node-01"]) == ["inventory"]
    assert named.problems["node-01"]["inventory"].startswith("the earlier run %s is unreadable: " % NEWER)
    assert not unnamed.problems.get("node-01") and named.run_ids == unnamed.run_ids == {"node-01": NEWER}


@pytest.mark.skipif(os.geteuid() != 0, reason="a directory only root may read needs root to make")
def test_an_earlier_run_this_user_may_not_read_is_eacces():
    root = tempfile.mkdtemp(prefix="gpufleet-previous-")
    try:
        os.chmod(root, 0o755)
        for run_id in (OLDER, NEWER):
            os.makedirs(os.path.join(root, run_id, "node-01"))
            with open(os.path.join(root, run_id, "node-01", "health.json"), "w", encoding="utf-8") as handle:
                json.dump({"status": "ok", "run_id": run_id, "probe": "health"}, handle)
            for folder in (os.path.join(root, run_id), os.path.join(root, run_id, "node-01")):
                os.chmod(folder, 0o755)
            os.chmod(os.path.join(root, run_id, "node-01", "health.json"), 0o644)
        os.chmod(os.path.join(root, NEWER), 0o700)  # root's own: nobody gets EACCES
        found = _unprivileged(lambda: _found(root))
        assert found["run_ids"] == {"node-01": NEWER, "node-02": NEWER}
        reason = found["problems"]["node-01"]["health"]
        assert reason == ("the earlier run %s is unreadable: EACCES (Permission denied) on %s; drift is not compared with "
                          "it, nor with an older run" % (NEWER, os.path.join(root, NEWER)))
        assert _found(root)["envelopes"] == {"node-01": ["health"]}  # root reads a 0700 directory it owns
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("unprivileged", [True, False], ids=["unprivileged", "as-this-user"])
def test_only_the_newest_runs_host_directory_unreadable_is_not_passed_over(results, unprivileged):
    os.chmod(os.path.join(results, NEWER, "node-01"), 0)
    found = _unprivileged(lambda: _found(results)) if unprivileged else _found(results)
    assert found["run_ids"] == {"node-01": NEWER, "node-02": NEWER}
    assert found["envelopes"] == {"node-01": [], "node-02": ["health"]}
    assert list(found["problems"]) == ["node-01"]
    reason = found["problems"]["node-01"]["health"]
    assert reason.startswith("the earlier run %s is unreadable: " % NEWER) and "node-01" in reason, reason


def test_the_drift_checks_skip_with_the_reason(tmp_path):
    with open(HEALTH_OK, encoding="utf-8") as handle:
        health = json.load(handle)
    for run_id in (OLDER, NEWER, CURRENT):
        (tmp_path / run_id / "node-01").mkdir(parents=True)
        (tmp_path / run_id / "node-01" / "health.json").write_text(json.dumps(dict(health, run_id=run_id)), encoding="utf-8")
    os.chmod(str(tmp_path / NEWER / "node-01"), 0)
    try:
        run = load_run(str(tmp_path / CURRENT))
        judgement = judge_run(run, str(tmp_path), {"node-01": {"health.gpu_count": {"params": {"expected": 2}}}})
    finally:
        os.chmod(str(tmp_path / NEWER / "node-01"), 0o755)
    drift = [check for check in judgement.hosts["node-01"].checks if check.id.startswith("drift.")]
    assert drift and {check.status for check in drift} == {"skip"}
    assert all(check.reason.startswith("not compared: the earlier run %s is unreadable: " % NEWER) for check in drift), drift
    assert not any(OLDER in check.reason for check in drift)
