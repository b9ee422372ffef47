"""The probe a dead controller worker was at is stored as unreachable with the cause; results of this playbook run
and finished results a resume keeps are left alone (plugins/plugin_utils/store/lost_worker.py)."""
import json
import os
import time

from ansible_collections.gpufleet.validation.plugins.module_utils.probe_envelope import failure_envelope
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import run_dir
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.lost_worker import record_lost_worker
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.results import store_result_at
from ansible_collections.gpufleet.validation.plugins.strategy.linear_per_host import worker_death

PROBES = ["health", "membw", "gemm", "p2p"]


def _host(tmp_path):
    writer = run_dir.playbook_writer(False, "quick", in_main_process=True)  # as the strategy, in the main process
    run_dir.open_run(str(tmp_path), "run1", writer)
    shown = str(tmp_path / "run1" / "gpu-a01")
    with run_dir.claimed_host_dir(str(tmp_path), "run1", "gpu-a01", writer) as host_fd:
        store_result_at(host_fd, "health", failure_envelope("health", "gpu-a01", "unavailable", "no NVML"), None, shown)
        store_result_at(host_fd, "membw", failure_envelope("membw", "gpu-a01", "unavailable", "kept"), None, shown)
    return tmp_path / "run1" / "gpu-a01"


def test_the_probe_the_worker_was_at_is_stored_unreachable_with_the_cause(tmp_path):
    host = _host(tmp_path)
    before = (host / "health.json").read_bytes()
    assert record_lost_worker(str(tmp_path), "run1", "gpu-a01", PROBES, "killed by SIGKILL") == "gemm"
    gemm = json.loads((host / "gemm.json").read_text())
    assert gemm["status"] == "unreachable" and gemm["run_id"] == "run1"
    assert gemm["reason"].startswith("the controller's worker process for this host died (killed by SIGKILL) while probe "
                                     "gemm was started or waited for")
    assert "stage: the controller" in gemm["reason"]
    assert (host / "health.json").read_bytes() == before
    assert not (host / "p2p.json").exists()  # not attempted: nothing to say beyond the lost one


def test_a_finished_result_of_an_earlier_playbook_run_is_kept(tmp_path):
    host = _host(tmp_path)
    an_hour_ago = time.time() - 3600
    os.utime(host / "health.json", (an_hour_ago, an_hour_ago))  # stored by an earlier playbook run of the run
    kept = (host / "health.json").read_bytes()
    assert record_lost_worker(str(tmp_path), "run1", "gpu-a01", PROBES, "killed by SIGKILL") == "gemm"
    assert (host / "health.json").read_bytes() == kept


def test_a_worker_that_died_after_its_last_probe_stores_nothing(tmp_path):
    host = _host(tmp_path)
    assert record_lost_worker(str(tmp_path), "run1", "gpu-a01", ["health", "membw"], "exited with status 1") is None
    assert sorted(os.listdir(host)) == ["health.json", "membw.json", "writer.json"]


def test_a_dead_workers_exit_code_in_words():
    assert worker_death(-9) == "killed by SIGKILL"
    assert worker_death(1) == "exited with status 1"
