"""A host whose SKU has no usable baseline and too few peers to compare is not a pass on the rules that needed them
(issue 32: with a duplicate YAML key in baselines/h200-sxm.yaml, a 2-host fleet passed a host at 50 % bandwidth: the
peer comparison could not decide with 2 hosts, and nothing said so in the verdict)."""
from __future__ import annotations

import os
import shutil

from ansible_collections.gpufleet.validation.plugins.plugin_utils.rules_and_baselines import load_baselines
from helpers import GPU0, GPU1, RIG_OVERRIDES, ROOT, health_ok, judge_fleet, recorded, rules

HALF = 0.5


def _broken_h200_baselines(tmp_path):
    folder = tmp_path / "baselines"
    shutil.copytree(os.path.join(ROOT, "baselines"), str(folder))
    path = folder / "h200-sxm.yaml"
    path.write_text(path.read_text().replace("nvlink_links: 18\n", "nvlink_links: 18\nnvlink_links: 18\n", 1))
    return load_baselines(str(folder))


def _host(number, speed=1.0):
    """The recorded H200 rig as host n (its own GPU UUIDs and serials), its copy bandwidth times speed."""
    health, membw = health_ok(), recorded("membw")
    for envelope in (health, membw):
        text_uuids = {GPU0: "GPU-%08d-0000-0000-0000-000000000000" % number, GPU1: "GPU-%08d-1111-1111-1111-111111111111" % number}
        for gpu in envelope["data"].get("gpus", []):
            gpu["uuid"] = text_uuids[gpu["uuid"]]
            gpu["serial"] = "%07d%06d" % (number, gpu["index"])
        for device in envelope["data"].get("devices", []):
            device["device"]["uuid"] = text_uuids[device["device"]["uuid"]]
            device["headline"]["bandwidth_gbps"] *= speed
            device["repeats"]["bandwidths_gbps"] = [value * speed for value in device["repeats"]["bandwidths_gbps"]]
    return {"envelopes": {"health": health, "membw": membw}, "reached": True, "reason": "", "groups": ["rack1"],
            "rule_overrides": RIG_OVERRIDES}


def _judge(hosts, tmp_path):
    baselines, problems = _broken_h200_baselines(tmp_path)
    assert len(problems) == 1 and "h200-sxm.yaml" in problems[0]
    return judge_fleet("run2", hosts, baselines, rules(), baseline_problems=problems)


def test_two_hosts_without_a_usable_baseline_are_not_compared_and_do_not_pass(tmp_path):
    judgement = _judge({"good": _host(1), "slow": _host(2, HALF)}, tmp_path)
    for name in ("good", "slow"):
        verdict = judgement.hosts[name]
        assert verdict.sku is None
        assert verdict.verdict == "warn", (name, verdict.reasons)
        bandwidth = [check for check in verdict.checks if check.id == "membw.bandwidth"]
        assert len(bandwidth) == 2 and all(check.status == "warn" for check in bandwidth)
        reason = bandwidth[0].reason
        assert "not compared: no usable baseline (no baseline matches NVIDIA H200" in reason, reason
        assert "baselines/h200-sxm.yaml skipped" in reason and "2 hosts of group unknown:NVIDIA H200 are too few to compare" in reason
        assert "(at least 3 needed)" in reason
        assert any("membw.bandwidth" in line and "not compared" in line for line in verdict.reasons)


def test_enough_peers_compare_the_hosts_and_the_skip_stays(tmp_path):
    hosts = {"a": _host(1), "b": _host(2), "c": _host(3), "slow": _host(4, HALF)}
    judgement = _judge(hosts, tmp_path)
    assert judgement.hosts["slow"].verdict == "warn"
    slow_fleet = [check for check in judgement.hosts["slow"].checks if check.id == "fleet.membw.bandwidth_gbps"]
    assert slow_fleet and all(check.status == "warn" for check in slow_fleet)
    for name in ("a", "b", "c", "slow"):
        bandwidth = [check for check in judgement.hosts[name].checks if check.id == "membw.bandwidth"]
        assert [check.status for check in bandwidth] == ["skip", "skip"], name


def test_a_host_with_its_baseline_is_judged_against_it_whatever_the_fleet(tmp_path):
    from helpers import baselines  # pylint: disable=import-outside-toplevel
    judgement = judge_fleet("run2", {"slow": _host(1, HALF)}, baselines(), rules())
    bandwidth = [check for check in judgement.hosts["slow"].checks if check.id == "membw.bandwidth"]
    assert [check.status for check in bandwidth] == ["fail", "fail"]
