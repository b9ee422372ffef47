"""Every probe result the tests hand to the judge or the report is one the store would keep: the recorded results
(every JSON file under a fixtures/ folder of tests/, tests/fixtures/ their one home) and the results the report tests
write into their fake runs (tests/unit/report/conftest.py: H200_DATA, NO_GPU_DATA, EVIL_DATA, membw_data), each
checked as the store checks it (store/schemas.py envelope_problems: the envelope, then its data against its probe's
schema). A fixture that drifts from its schema fails here, rather than describing data that can never reach a report."""
import glob
import importlib.util
import json
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
RECORDED = sorted(glob.glob(os.path.join(TESTS, "**", "fixtures", "**", "*.json"), recursive=True))
REPORT_CONFTEST = os.path.join(HERE, "report", "conftest.py")


def _load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _report_fixtures():
    """tests/unit/report/conftest.py as a module of its own (its fixtures serve only the tests below it)."""
    spec = importlib.util.spec_from_file_location("report_fixtures_checked", REPORT_CONFTEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_recorded_results_have_one_home():
    assert RECORDED
    assert {os.path.dirname(path) for path in RECORDED} == {os.path.join(TESTS, "fixtures")}


@pytest.mark.parametrize("path", RECORDED, ids=lambda path: os.path.relpath(path, TESTS))
def test_a_recorded_result_is_valid(path):
    envelope = _load(path)
    assert envelope_problems(envelope) == []
    assert envelope["status"] in ("ok", "partial", "unavailable") and envelope["data"]


def test_every_result_the_report_tests_write_is_valid(tmp_path):
    fixtures = _report_fixtures()
    run = fixtures.add_judged_hosts(fixtures.write_fleet(fixtures.FakeRun(tmp_path)))
    paths = sorted(glob.glob(os.path.join(str(run.run_dir), "*", "*.json")))
    checked = []
    for path in paths:
        name = os.path.relpath(path, str(run.run_dir))
        if name in fixtures.UNREADABLE_ON_PURPOSE:
            with pytest.raises(ValueError):
                _load(path)
            continue
        envelope = _load(path)
        assert envelope_problems(envelope) == [], name
        checked.append((envelope["probe"], envelope["status"]))
    # Data checked against the probe's schema: ok, partial and unavailable results, of health and membw both.
    assert {("health", "ok"), ("health", "partial"), ("health", "unavailable"), ("membw", "ok")} <= set(checked)
    assert len(checked) == len(paths) - len(fixtures.UNREADABLE_ON_PURPOSE)


def test_each_python_fixture_is_valid():
    fixtures = _report_fixtures()
    for probe, name, data in (("health", "H200_DATA", fixtures.H200_DATA), ("health", "NO_GPU_DATA", fixtures.NO_GPU_DATA),
                              ("health", "EVIL_DATA", fixtures.EVIL_DATA), ("membw", "membw_data", fixtures.membw_data(4000.0))):
        envelope = fixtures.envelope("host", probe=probe, status="partial", reason="checked here", data=data)
        assert envelope_problems(envelope) == [], name
