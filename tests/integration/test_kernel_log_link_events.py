"""A test-fleet veth taken down on this machine: the kernel's own line for it ("<bridge>: port N(<veth>) entered
disabled state") is read back through the health probe's kmsg reader and classified as a NIC link-down event of that
interface; the judge shows it as benign (a bridge port), never as a failure."""
from __future__ import annotations

import os
import re
import subprocess
import time

import pytest
import yaml

from probe_packages.health.kernel_log_classify import classify_lines
from probe_packages.health.kernel_log_reader import SourceUnreadable, read_kmsg

KMSG_LINES = 5000
RULES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "rules.yaml")


def _built_in_benign_patterns():
    with open(RULES, encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    return [rule for rule in document["rules"] if rule["id"] == "health.kernel_log_events"][0]["params"]["benign_patterns"]


def _kmsg():
    try:
        return read_kmsg("/dev/kmsg", KMSG_LINES, None)
    except SourceUnreadable as exc:
        pytest.skip("the kernel log is not readable here: %s" % exc)
    return []


def _ip(fleet, *args):
    subprocess.run([fleet._tool_ip()] + list(args), check=True, capture_output=True, timeout=30)  # pylint: disable=protected-access


def test_a_veth_taken_down_is_a_classified_link_event(netns_fleet):
    fleet = netns_fleet(hosts=1)
    veth = fleet.live_hosts[0]["veth"]
    before = set(_kmsg())
    _ip(fleet, "link", "set", veth, "down")
    try:
        new = []
        for unused_attempt in range(50):
            new = [line for line in _kmsg() if line not in before]
            if any(veth in line for line in new):
                break
            time.sleep(0.1)
        classified = classify_lines(new)
        downs = [event for event in classified["events"] if event["kind"] == "nic_link_down" and event["device"] == veth]
        assert downs, new
        assert downs[0]["detail"] == {"bridge": fleet.bridge} and "entered disabled state" in downs[0]["line"]
        assert any(re.search(pattern, downs[0]["line"]) for pattern in _built_in_benign_patterns())
    finally:
        _ip(fleet, "link", "set", veth, "up")
