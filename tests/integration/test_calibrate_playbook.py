"""The real `playbooks/calibrate.yml` on a stored run, then `playbooks/report.yml` judging that run against the file it
wrote (issue 44, point 3).

The run is the H200 rig's recorded acceptance results replayed as four hosts, their rates a few percent apart. The
baselines they are first judged with are an H200 without its headline known-good values, as the H100 was before issue
44: its headline checks skip ("no known-good value"). Calibrated from that run, and judged again with the written
folder, every headline check is judged against the calibrated median, its source naming the run.
"""
import json
import os
import subprocess
import sys

import yaml
from test_validate_playbook import ANSIBLE_PLAYBOOK, ROOT  # pylint: disable=import-error

sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "calibrate"))
from calibration_runs import RUN_ID, store_run  # noqa: E402  pylint: disable=import-error,wrong-import-position

HOSTS = ("node-a", "node-b", "node-c", "node-d")
FACTORS = {"node-a": 1.0, "node-b": 0.97, "node-c": 1.02, "node-d": 0.99}
HEADLINES = {"membw.bandwidth": "torch_copy_4gib", "hostbw.pinned_h2d": "nvbandwidth_h2d_ce",
             "hostbw.pinned_d2h": "nvbandwidth_d2h_ce", "gemm.bf16_burst": "bf16_matmul",
             "gemm.bf16_sustained": "bf16_matmul_sustained", "gemm.fp8_burst": "fp8_matmul",
             "gemm.fp8_sustained": "fp8_matmul_sustained"}


def playbook(tmp_path, name, *extra):
    inventory = tmp_path / "inventory.yml"
    # the recording is a 1-GPU VM slice of an 8-GPU board: its inventory says so
    inventory.write_text(yaml.safe_dump({"all": {"vars": {"gpufleet_rule_overrides": {"health.gpu_count": {"params": {"expected": 1}}}},
                                                 "hosts": {host: {} for host in HOSTS}}}))
    argv = [ANSIBLE_PLAYBOOK, os.path.join("playbooks", name), "-i", str(inventory), "-e", "gpufleet_results_dir=%s" % (tmp_path / "results")]
    completed = subprocess.run(argv + list(extra), cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    return completed.returncode, completed.stdout + completed.stderr


def report(tmp_path, baselines_dir):
    """playbooks/report.yml on the run, report only (gpufleet_gate=false): the replay holds four of acceptance's probes,
    so the gate would refuse its hosts for the others; the headline checks are what this test reads."""
    return playbook(tmp_path, "report.yml", "-e", "gpufleet_run_id=%s" % RUN_ID, "-e", "gpufleet_baselines_dir=%s" % baselines_dir,
                    "-e", "gpufleet_hosts=all", "-e", "gpufleet_gate=false")


def headline_checks(tmp_path):
    with open(tmp_path / "results" / RUN_ID / "fleet.json", encoding="utf-8") as handle:
        fleet = json.load(handle)
    return {(name, check["id"]): check for name, host in fleet["hosts"].items() for check in host["checks"] if check["id"] in HEADLINES}


def without_headline_values(folder):
    """The collection's H200 baseline without the known-good values of its headlines, in a folder of its own."""
    with open(os.path.join(ROOT, "baselines", "h200-sxm.yaml"), encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    for key in HEADLINES.values():
        document["known_good"].pop(key)
    folder.mkdir()
    (folder / "h200-sxm.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    return str(folder)


def test_a_baseline_calibrated_from_a_run_is_what_the_next_judgement_holds_the_headlines_against(tmp_path):
    store_run(tmp_path / "results", HOSTS, scale={host: {"membw": factor, "gemm": factor} for host, factor in FACTORS.items()})
    before = without_headline_values(tmp_path / "before")
    site = tmp_path / "site"

    rc, output = report(tmp_path, before)
    assert rc == 0, output
    skipped = headline_checks(tmp_path)
    assert len(skipped) == len(HOSTS) * len(HEADLINES)
    assert {check["status"] for check in skipped.values()} == {"skip"}
    assert all("no known-good value for SKU h200-sxm" in check["reason"] for check in skipped.values())

    # check mode: the file that would be written is printed, nothing is written; the run is the one latest points at
    rc, output = playbook(tmp_path, "calibrate.yml", "--check", "-e", "gpufleet_calibrate_sku=h200-sxm",
                          "-e", "gpufleet_calibrate_dir=%s" % site, "-e", "gpufleet_baselines_dir=%s" % before)
    assert rc == 0, output
    assert "check mode: %s would be written" % (site / "h200-sxm.yaml") in output and "calibrated from run %s" % RUN_ID in output
    assert not site.exists()

    rc, output = playbook(tmp_path, "calibrate.yml", "-e", "gpufleet_calibrate_sku=h200-sxm", "-e", "gpufleet_calibrate_dir=%s" % site,
                          "-e", "gpufleet_baselines_dir=%s" % before)
    assert rc == 0, output
    assert "calibrating h200-sxm from run %s (starting from %s/h200-sxm.yaml): 4 healthy host(s)" % (RUN_ID, before) in output
    with open(site / "h200-sxm.yaml", encoding="utf-8") as handle:
        known_good = yaml.safe_load(handle)["known_good"]

    rc, output = report(tmp_path, site)
    assert rc == 0, output
    judged = headline_checks(tmp_path)
    assert len(judged) == len(HOSTS) * len(HEADLINES)
    for (host, check_id), check in sorted(judged.items()):
        entry = known_good[HEADLINES[check_id]]
        assert check["status"] == "pass", (host, check)
        assert check["reference"] == entry["value"], (host, check_id)
        assert "calibrated from run %s: median of 4 hosts (node-a, node-b, node-c, node-d)" % RUN_ID in check["reference_source"]
    # each value is the median of the hosts' own: node-b's copy is 3 % slower than node-a's, and the median between them
    membw = {host: judged[(host, "membw.bandwidth")]["value"] for host in HOSTS}
    assert membw["node-b"] < known_good["torch_copy_4gib"]["value"] < membw["node-a"]

    rc, output = playbook(tmp_path, "calibrate.yml", "-e", "gpufleet_calibrate_sku=h200-sxm", "-e", "gpufleet_calibrate_dir=%s" % site,
                          "-e", "gpufleet_baselines_dir=%s" % before, "-e", "gpufleet_run_id=%s" % RUN_ID)
    assert rc == 2, output
    assert "h200-sxm.yaml exists: nothing was written" in output
