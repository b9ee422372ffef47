"""Calibrating a SKU's baseline from a stored run (plugins/plugin_utils/calibrate/): the recorded H200 acceptance
results replayed as several hosts, their rates scaled per host, calibrated, written and loaded back."""
import json
import os
import shutil
import statistics

import pytest
import yaml
from calibration_runs import RUN_ID, store_run

from ansible_collections.gpufleet.validation.plugins.plugin_utils.calibrate.from_run import CalibrationRefused, calibrate
from ansible_collections.gpufleet.validation.plugins.plugin_utils.calibrate.write import WriteRefused, write_baseline, write_problem
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.datasheet_floors import floors_of
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.machine_facts import GpuDescriptor
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.sku import identify_gpu
from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import default_baselines_dir, load_baselines
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.latest_link import latest_run_id, point_latest_at

# The recording is a 1-GPU VM slice of an 8-GPU board: its inventory says so.
ONE_GPU = {"health.gpu_count": {"params": {"expected": 1}}}
HEADLINE_KEYS = ("bf16_matmul", "bf16_matmul_sustained", "fp8_matmul", "fp8_matmul_sustained", "nvbandwidth_d2h_ce",
                 "nvbandwidth_h2d_ce", "torch_copy_4gib")
NEW_GPU = {"name": "NVIDIA Test Accelerator 96GB", "pci.device_id": "0x2bad10de", "memory.total_mib": 97871}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FLOORS = floors_of({baseline["id"]: baseline for baseline in load_baselines()[0]}["h200-sxm"])
FACTS = {"form_factor": "pcie", "nvlink_links": 0, "pcie": {"gen": 5, "width": 16, "source": "the vendor's datasheet"}}


def overrides(hosts):
    return {host: ONE_GPU for host in hosts}


def run_of(tmp_path, hosts, **kwargs):
    results = tmp_path / "results"
    store_run(results, hosts, **kwargs)
    return str(results)


def calibrated(results, hosts, sku="h200-sxm", **kwargs):
    return calibrate(results, RUN_ID, sku, rule_overrides=overrides(hosts), **kwargs)


def test_four_healthy_hosts_give_a_file_that_loads_with_each_headlines_median_over_the_hosts(tmp_path):
    hosts = ["node-a", "node-b", "node-c", "node-d"]
    factors = {"node-a": 1.0, "node-b": 0.96, "node-c": 1.03, "node-d": 0.99}
    results = run_of(tmp_path, hosts, scale={host: {"membw": factor, "gemm": factor} for host, factor in factors.items()})
    calibration = calibrated(results, hosts)
    assert calibration.refusals == [] and calibration.hosts == hosts
    path = write_baseline(str(tmp_path / "site"), "h200-sxm", calibration.text)
    loaded, problems = load_baselines(str(tmp_path / "site"))
    assert problems == [] and [baseline["id"] for baseline in loaded] == ["h200-sxm"]
    assert os.path.basename(path) == "h200-sxm.yaml"
    known_good = loaded[0]["known_good"]
    assert sorted(key for key, entry in known_good.items() if RUN_ID in entry["source"]) == sorted(HEADLINE_KEYS)
    membw = {result.key: result for result in calibration.keys}["torch_copy_4gib"]
    per_host = [round(value, 2) for unused_host, value in sorted(membw.values.items())]
    entry = known_good["torch_copy_4gib"]
    assert entry["measured"]["machines"] == per_host
    assert entry["value"] == round(statistics.median(per_host), 2)
    # each host's value is the recording's rate scaled by its factor: the median lies between node-d's and node-a's
    assert per_host[3] < entry["value"] < per_host[0]
    assert entry["source"].startswith("calibrated from run %s: median of 4 hosts (node-a, node-b, node-c, node-d)" % RUN_ID)
    # the median factor is 0.995, node-b at 0.96 lies 3.5 % below it
    assert "spread 3.5 %" in entry["source"] and "tolerance 10.0 %" in entry["source"]
    sustained = known_good["bf16_matmul_sustained"]
    assert sustained["method"] == "sustained" and sustained["power_limit_w"] == 700
    assert known_good["bf16_matmul"]["method"] == "burst"
    # what was not calibrated is the starting file's: its match, datasheet and the other known-good values
    shipped = {baseline["id"]: baseline for baseline in load_baselines()[0]}["h200-sxm"]
    assert loaded[0]["match"] == shipped["match"] and loaded[0]["datasheet"] == shipped["datasheet"]
    assert known_good["babelstream_copy"] == shipped["known_good"]["babelstream_copy"]


def test_two_hosts_are_refused(tmp_path):
    hosts = ["node-a", "node-b"]
    calibration = calibrated(run_of(tmp_path, hosts), hosts)
    assert calibration.text is None and calibration.document is None
    assert calibration.refusals == ["2 healthy host(s) of h200-sxm in run %s (node-a, node-b); a baseline is the median of "
                                    "at least 3" % RUN_ID]


def test_a_host_beyond_the_drift_tolerance_refuses_its_metric_naming_the_host_and_its_value(tmp_path):
    """node-c's copy runs at 88 % of the others': the judge only warns (above its 85 % fail threshold), so the host is
    healthy, but 12 % from the median is beyond the metric's 10 % drift tolerance."""
    hosts = ["node-a", "node-b", "node-c", "node-d"]
    calibration = calibrated(run_of(tmp_path, hosts, scale={"node-c": {"membw": 0.88}}), hosts)
    assert calibration.text is None
    assert len(calibration.refusals) == 1
    refusal = calibration.refusals[0]
    assert refusal.startswith("known_good.torch_copy_4gib (membw.bandwidth_gbps): spread 12.0 %")
    assert refusal.endswith("above the metric's drift tolerance 10.0 %; outlying: node-c 3766 GB/s (-12.0 %)")
    assert "node-a" not in refusal.split("outlying:")[1]


def test_a_batch_that_would_fail_against_the_skus_datasheet_floor_is_refused_naming_the_metric(tmp_path):
    """A user's folder whose h200-sxm.yaml holds a weak copy reference (2000 GB/s) judges four H200s copying at half
    speed healthy; calibrating from them would write that into the next baseline. The floor ratios that cover the SKU
    (judge/datasheet_floors.py) apply whatever the baseline's entries are, measured or not: 0.887 x 4800 GB/s, and a
    median below 85 % of it (the rule's fail threshold) is refused."""
    folder = tmp_path / "site"
    shutil.copytree(os.path.join(ROOT, "baselines"), str(folder))
    path = folder / "h200-sxm.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    document["known_good"]["torch_copy_4gib"] = {"value": 2000, "unit": "GB/s", "source": "a site's weak value"}
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    hosts = ["node-a", "node-b", "node-c"]
    slow = run_of(tmp_path, hosts, scale={host: {"membw": 0.5} for host in hosts})
    calibration = calibrated(slow, hosts, baselines_dir=str(folder))
    assert calibration.text is None and calibration.hosts == hosts  # healthy by the weak reference
    assert calibration.refusals == [
        "known_good.torch_copy_4gib (membw.bandwidth_gbps): the median 2140 GB/s would fail against the datasheet floor "
        "4258 GB/s (below 85 % of it, 3619 GB/s; " + FLOORS["torch_copy_4gib"]["source"] + "): a batch this slow "
        "calibrates a bad baseline; find why before calibrating"]


def test_a_healthy_batch_near_its_floors_is_not_refused(tmp_path):
    """The floor is the lowest healthy ratio of its evidence, so a healthy GPU sits near it: the rig's H200 fp8 burst
    (1395 TFLOP/s) and bf16 sustained (660) lie just under their floors (1401, 662). Refused below the floor itself,
    that healthy batch was refused; only a median that would fail against the floor is."""
    hosts = ["node-a", "node-b", "node-c"]
    healthy = calibrated(run_of(tmp_path, hosts), hosts)
    assert healthy.refusals == [] and healthy.document["known_good"]["fp8_matmul"]["value"] < FLOORS["fp8_matmul"]["value"]


def test_a_gpu_no_baseline_knows_gets_an_exact_match_block_from_its_hosts_and_the_stated_facts(tmp_path):
    hosts = ["node-a", "node-b", "node-c"]
    results = run_of(tmp_path, hosts, gpu={host: NEW_GPU for host in hosts})
    without = calibrated(results, hosts, sku="test-accelerator")
    assert without.text is None and "give form_factor, nvlink_links, pcie in the facts" in without.refusals[0]
    calibration = calibrated(results, hosts, sku="test-accelerator", facts=FACTS)
    assert calibration.refusals == [], calibration.lines()
    match = calibration.document["match"]
    assert match["names"] == ["NVIDIA Test Accelerator 96GB"]
    assert [entry["id"] for entry in match["pci_device_ids"]] == ["0x2bad10de"]
    assert (match["memory_mib"]["min"], match["memory_mib"]["max"]) == (97871, 97871)
    assert RUN_ID in match["pci_device_ids"][0]["source"] and "node-a, node-b, node-c" in match["memory_mib"]["source"]
    assert calibration.document["name"] == "NVIDIA Test Accelerator 96GB" and calibration.document["form_factor"] == "pcie"
    write_baseline(str(tmp_path / "site"), "test-accelerator", calibration.text)
    loaded, problems = load_baselines(str(tmp_path / "site"))
    assert problems == []
    gpu = GpuDescriptor(index=0, name=NEW_GPU["name"], device_id="0x2bad10de", memory_mib=97871)
    assert identify_gpu(gpu, loaded)[0] == "test-accelerator"
    assert identify_gpu(GpuDescriptor(index=0, name="NVIDIA H200", device_id="0x233510de", memory_mib=143771), loaded)[0] is None
    assert sorted(loaded[0]["known_good"]) == sorted(HEADLINE_KEYS)


def test_an_unhealthy_host_is_left_out_with_why_and_one_named_in_the_host_list_refuses(tmp_path):
    hosts = ["node-a", "node-b", "node-c", "node-d"]
    results = run_of(tmp_path, hosts)
    unwatched = dict(overrides(hosts), **{"node-d": {}})  # node-d is judged as an 8-GPU board missing 7 GPUs: it fails
    calibration = calibrate(results, RUN_ID, "h200-sxm", rule_overrides=unwatched)
    assert calibration.refusals == [] and calibration.hosts == ["node-a", "node-b", "node-c"]
    assert calibration.left_out["node-d"].startswith("verdict fail (health.gpu_count: 1 of 8 expected GPUs")
    named = calibrate(results, RUN_ID, "h200-sxm", hosts=["node-a", "node-b", "node-d"], rule_overrides=unwatched)
    assert named.text is None and named.refusals[0].startswith("node-d, named in the host list, is not healthy: verdict fail")
    typo = calibrate(results, RUN_ID, "h200-sxm", hosts=["node-a", "node-x"], rule_overrides=unwatched)
    assert typo.refusals == ["host(s) node-x named in the host list are not in run %s" % RUN_ID]


def test_a_run_or_sku_that_is_not_there_cannot_start(tmp_path):
    with pytest.raises(CalibrationRefused, match="has no results"):
        calibrate(str(tmp_path), "20261201T000000Z-000000", "h200-sxm")
    with pytest.raises(CalibrationRefused, match="is not a baseline id"):
        calibrate(str(tmp_path), RUN_ID, "../h200-sxm")


def test_the_file_is_written_only_into_a_folder_of_the_users_never_through_a_link_nor_over_a_file(tmp_path):
    site = tmp_path / "site"
    path = write_baseline(str(site), "h200-sxm", "first\n")
    assert write_problem(str(site), "h200-sxm").endswith("exists: nothing was written; move it away or replace it "
                                                         "(gpufleet_calibrate_replace=true)")
    with pytest.raises(WriteRefused, match="exists: nothing was written"):
        write_baseline(str(site), "h200-sxm", "second\n")
    write_baseline(str(site), "h200-sxm", "second\n", replace=True)
    with open(path, encoding="utf-8") as handle:
        assert handle.read() == "second\n"
    assert sorted(os.listdir(site)) == ["h200-sxm.yaml"]  # no temporary file left
    (tmp_path / "elsewhere").mkdir()
    os.symlink(str(tmp_path / "elsewhere"), str(tmp_path / "linked"))
    with pytest.raises(WriteRefused, match="is a symbolic link"):
        write_baseline(str(tmp_path / "linked"), "h200-sxm", "x\n")
    os.symlink(str(tmp_path / "target.yaml"), str(site / "h100-sxm.yaml"))
    with pytest.raises(WriteRefused, match="is a symbolic link, not a baseline file"):
        write_baseline(str(site), "h100-sxm", "x\n", replace=True)
    assert not os.path.lexists(str(tmp_path / "target.yaml")) and os.listdir(str(tmp_path / "elsewhere")) == []
    with pytest.raises(WriteRefused, match="the collection's own baselines folder"):
        write_baseline(default_baselines_dir(), "h200-sxm", "x\n", replace=True)
    with pytest.raises(WriteRefused, match="is not a baseline id"):
        write_baseline(str(site), "../escape", "x\n")


def test_latest_names_the_run_the_latest_link_points_at(tmp_path):
    with pytest.raises(ValueError, match="missing"):
        latest_run_id(str(tmp_path))
    point_latest_at(str(tmp_path), RUN_ID)
    assert latest_run_id(str(tmp_path)) == RUN_ID


def at_a_lower_power_limit(results, host):
    """The host's sustained matmuls as if run at a 600 W power limit (the recording's is 700 W)."""
    gemm = os.path.join(results, RUN_ID, host, "gemm.json")
    with open(gemm, encoding="utf-8") as handle:
        envelope = json.load(handle)
    for rate in envelope["data"]["devices"][0]["dtypes"].values():
        if isinstance(rate, dict) and isinstance(rate.get("power_states"), dict) and "sustained" in rate["power_states"]:
            rate["power_states"]["sustained"]["power_limit_w"] = 600.0
    with open(gemm, "w", encoding="utf-8") as handle:
        json.dump(envelope, handle)


def test_a_gpu_whose_check_skipped_it_gives_no_value_and_the_key_says_which_host_is_missing(tmp_path):
    """node-d ran its sustained matmuls at a 600 W limit: its checks skip them (the known-good is at 700 W), so the
    sustained keys are the median of the other three, and say so; its burst rates count."""
    hosts = ["node-a", "node-b", "node-c", "node-d"]
    results = run_of(tmp_path, hosts)
    at_a_lower_power_limit(results, "node-d")
    calibration = calibrated(results, hosts)
    assert calibration.refusals == [], calibration.lines()
    keys = {key.key: key for key in calibration.keys}
    assert sorted(keys["bf16_matmul_sustained"].values) == ["node-a", "node-b", "node-c"]
    assert sorted(keys["bf16_matmul"].values) == hosts
    line = keys["bf16_matmul_sustained"].line()
    assert "; not from node-d (GPU 0 (GPU-" in line and "check gemm.bf16_sustained is skip:" in line and "600 W" in line
    assert calibration.document["known_good"]["bf16_matmul_sustained"]["power_limit_w"] == 700


def test_sustained_rates_at_different_power_limits_with_no_reference_limit_are_refused_naming_them(tmp_path):
    """A GPU no baseline knows has no reference limit to leave a host out by: the hosts' limits must agree."""
    hosts = ["node-a", "node-b", "node-c"]
    results = run_of(tmp_path, hosts, gpu={host: NEW_GPU for host in hosts})
    at_a_lower_power_limit(results, "node-c")
    calibration = calibrated(results, hosts, sku="test-accelerator", facts=FACTS)
    assert calibration.text is None
    assert "known_good.bf16_matmul_sustained (gemm.bf16_sustained_tflops): the hosts measured it under different " \
           "power_limit_w: node-a 700, node-b 700, node-c 600" in calibration.refusals
