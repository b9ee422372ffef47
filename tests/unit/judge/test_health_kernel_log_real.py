"""This machine's real kernel log, read through the health probe's own reader and classifier, then judged: nothing
crashes, every recorded line classifies back to its kind, and nothing benign fails. On the controller the SSH test
fleet's bridge and veth lines are there ("gf...br: port 1(gf...v0) entered disabled state"): they must be classified as
NIC link events and shown as benign. Skipped with the reader's reason where the kernel log cannot be read (not root
with dmesg_restrict=1, a container without /dev/kmsg)."""
from __future__ import annotations

import re

import pytest

from helpers import checks_of, health_ok, judge_one, rules
from probe_packages.health.kernel_log import collect_kernel_log
from probe_packages.health.kernel_log_classify import classify_line
from probelib.fields import is_unavailable
from probelib.nvml.access import NvmlSession
from probelib.nvml.context import ReadContext
from probelib.system.roots import SystemRoots


@pytest.fixture(scope="module")
def real_log():
    log = collect_kernel_log(ReadContext(params={}, nvml=NvmlSession(), roots=SystemRoots()))
    if is_unavailable(log):
        pytest.skip("this machine's kernel log is not readable here: %s" % log["unavailable"])
    return log


def _benign(line):
    rule = [rule for rule in rules()["rules"] if rule["id"] == "health.kernel_log_events"][0]
    return any(re.search(pattern, line) for pattern in rule["params"]["benign_patterns"])


def test_the_real_log_is_read_and_its_lines_classified(real_log):
    assert real_log["lines_read"] > 0
    assert sum(real_log["counts"].values()) == len(real_log["events"]) + sum(real_log["events_not_recorded"].values())
    for event in real_log["events"]:
        again = classify_line(event["line"])
        assert again is not None and again["kind"] == event["kind"], event
    bridge_lines = [event for event in real_log["events"] if "bridge" in event["detail"]]
    assert all(event["kind"] in ("nic_link_down", "nic_link_up") for event in bridge_lines)


def test_nothing_benign_in_the_real_log_fails(real_log):
    envelope = health_ok()
    envelope["data"]["kernel_log"] = real_log
    checks = checks_of(judge_one(envelope), "health.kernel_log_events")
    assert checks and all(check.status in ("pass", "warn", "fail") for check in checks), [c.reason for c in checks]
    benign = [event for event in real_log["events"] if _benign(event["line"])]
    judged_devices = {event["device"] for event in real_log["events"] if not _benign(event["line"])}
    for check in checks:
        if check.status == "pass":
            continue
        # a warn or fail names only devices that had a line no benign pattern matched
        named = set(check.value)
        assert named <= {str(device) for device in judged_devices}, (check.reason, named)
    if benign:
        shown = [check for check in checks if check.reason.startswith("benign kernel-log lines")]
        assert len(shown) == 1 and shown[0].status == "pass" and shown[0].value == len(benign)
