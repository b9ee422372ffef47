"""The rig recordings under docs/examples are results the store keeps today: each probe result in a run's host folder
is valid against its probe's schema (store/schemas.py envelope_problems), or is listed in docs/examples/superseded.json
with the change that left it behind. A listed recording must still break today's schema, so the list cannot go stale."""
import glob
import json
import os
import re

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_kit.registry import declarations
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "docs", "examples")
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-\d{6}$")


def recorded_results():
    found = []
    for path in glob.glob(os.path.join(EXAMPLES, "**", "*.json"), recursive=True):
        host_dir = os.path.dirname(path)
        probe = os.path.basename(path)[:-len(".json")]
        if RUN_ID.match(os.path.basename(os.path.dirname(host_dir))) and probe in declarations():
            found.append(os.path.relpath(path, EXAMPLES).replace(os.sep, "/"))
    return sorted(found)


def superseded():
    with open(os.path.join(EXAMPLES, "superseded.json"), encoding="utf-8") as handle:
        return json.load(handle)


def problems_of(relative):
    with open(os.path.join(EXAMPLES, relative), encoding="utf-8") as handle:
        return envelope_problems(json.load(handle))


def test_the_examples_hold_the_results_of_every_rig_run():
    assert len(recorded_results()) > 100


@pytest.mark.parametrize("relative", recorded_results())
def test_a_recorded_result_is_valid_today_or_listed_as_superseded(relative):
    problems = problems_of(relative)
    if relative in superseded():
        assert problems, "%s is valid today: take it off docs/examples/superseded.json" % relative
    else:
        assert problems == []


def test_each_superseded_recording_exists_and_says_why():
    listed = superseded()
    assert set(listed) <= set(recorded_results())
    assert all(len(reason) > 40 for reason in listed.values())
