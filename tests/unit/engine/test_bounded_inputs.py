"""Probe time limits are bounded (issue 32: probe_timeouts: {health: 99999999999} was accepted, while 0, -5, "10",
1e12 and true were refused): a day (86400 s) at most, refused before a probe runs with the limit named."""
from __future__ import annotations

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils.probe_spec import PROBE_TIMEOUT_LIMIT_S
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_variables_check import timeout_problems

PROBES = ["health", "membw"]


@pytest.mark.parametrize("seconds", [1, 600, PROBE_TIMEOUT_LIMIT_S])
def test_a_limit_up_to_a_day_is_accepted(seconds):
    assert timeout_problems({"health": seconds}, PROBES) == []


@pytest.mark.parametrize("seconds", [99999999999, PROBE_TIMEOUT_LIMIT_S + 1, 2 ** 63])
def test_a_limit_beyond_a_day_is_refused_naming_the_limit(seconds):
    assert timeout_problems({"health": seconds}, PROBES) == [
        "probe_timeouts.health is %d; a time limit may be at most 86400 seconds (a day)" % seconds]


@pytest.mark.parametrize("seconds", [0, -5, "10", 1e12, True])
def test_what_was_refused_before_still_is(seconds):
    assert len(timeout_problems({"membw": seconds}, PROBES)) == 1


def test_the_limit_is_a_day():
    assert PROBE_TIMEOUT_LIMIT_S == 24 * 60 * 60
