"""Every probe result the tests hand to the judge or the report is one the store would keep: the recorded results
(every JSON file under a fixtures/ folder of tests/, tests/fixtures/ their one home), the results the report tests
write into their fake runs (tests/unit/report/conftest.py: H200_DATA, NO_GPU_DATA, EVIL_DATA, membw_data) and the
results the judge tests' builders make from the rigs' recorded runs (tests/unit/judge/: membw, hostbw, p2p with its
pairs, collective with its curves, load with its GPUs, toolchain with its contract records, and the measurement
readers' device entries, each called as the judge tests typically call it), each checked as the store checks it (store/schemas.py envelope_problems:
the envelope, then its data against its probe's schema). A fixture that drifts from its schema fails here, rather than
describing data that can never reach a report."""
import glob
import importlib.util
import json
import os
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import envelope_problems

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
RECORDED = sorted(glob.glob(os.path.join(TESTS, "**", "fixtures", "**", "*.json"), recursive=True))
REPORT_CONFTEST = os.path.join(HERE, "report", "conftest.py")
JUDGE_TESTS = os.path.join(HERE, "judge")
JUDGE_BUILDERS = ("test_measurement_checks", "test_interconnect_checks", "test_load_checks", "test_toolchain_checks",
                  "test_measurement_readers")


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


@pytest.fixture(scope="module")
def judge_tests():
    """The judge test modules that build probe results, each as a module of its own, and their shared helpers: they
    import tests/unit/judge/helpers.py as the top-level module `helpers`, so that folder is on sys.path while they load."""
    added = JUDGE_TESTS not in sys.path
    if added:
        sys.path.insert(0, JUDGE_TESTS)
    try:
        modules = {"helpers": importlib.import_module("helpers")}
        for name in JUDGE_BUILDERS:
            spec = importlib.util.spec_from_file_location("judge_builders_checked_" + name, os.path.join(JUDGE_TESTS, name + ".py"))
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            modules[name.replace("test_", "", 1)] = module
        yield modules
    finally:
        if added:
            sys.path.remove(JUDGE_TESTS)


def _with_devices(envelope, entries):
    """A reader test's device entries in place of the devices of the rig's recorded result of their probe."""
    envelope["data"]["devices"] = list(entries)
    return envelope


# (id, the builder called as the judge tests call it): m = the judge test modules by name less "test_".
JUDGE_BUILT = [
    ("membw", lambda m: m["measurement_checks"].membw([4300.0, 4300.0])),
    ("membw-fail", lambda m: m["measurement_checks"].membw([3442.0, 4300.0])),
    ("membw-noisy", lambda m: m["measurement_checks"].membw([4300.0, 4300.0], cv_pct=7.5)),
    ("membw-quick", lambda m: m["measurement_checks"].membw([4300.0, 4300.0], source="quick_largest_size")),
    ("hostbw", lambda m: m["measurement_checks"].hostbw(55.4, 55.1)),
    ("hostbw-slow", lambda m: m["measurement_checks"].hostbw(40.0, 55.1)),
    ("p2p", lambda m: m["interconnect_checks"].p2p(
        [m["interconnect_checks"].pair(0, 1, 400.0), m["interconnect_checks"].pair(1, 0, 395.0)])),
    ("p2p-bidirectional", lambda m: m["interconnect_checks"].p2p(
        [m["interconnect_checks"].pair(0, 1, 390.0, bidir=780.0), m["interconnect_checks"].pair(1, 0, 390.0, bidir=600.0)])),
    ("p2p-pcie-3gpus", lambda m: m["interconnect_checks"].p2p(
        [m["interconnect_checks"].pair(src, dst, 50.0, link="PXB", kind="pcie") for src, dst in
         ((0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1))], gpus=3)),
    ("p2p-failed-pairs", lambda m: m["interconnect_checks"].p2p(
        [m["interconnect_checks"].pair(0, 1, 390.0, peer_access=False, error="no peer access"),
         m["interconnect_checks"].pair(1, 0, 390.0, verified=False), m["interconnect_checks"].pair(0, 2, 390.0),
         m["interconnect_checks"].pair(2, 0, 390.0),
         m["interconnect_checks"].pair(1, 2, 390.0, error="CUDA error: an illegal memory access"),
         m["interconnect_checks"].pair(2, 1, 390.0)], gpus=3)),
    ("collective", lambda m: m["interconnect_checks"].collective(
        [m["interconnect_checks"].curve("default", 360.0), m["interconnect_checks"].curve("p2p_disabled", 20.0)])),
    ("collective-unverified", lambda m: m["interconnect_checks"].collective(
        [m["interconnect_checks"].curve("default", 30.0), m["interconnect_checks"].curve("p2p_disabled", 20.0, verified=False)])),
    ("collective-8-ranks", lambda m: m["interconnect_checks"].collective(
        [m["interconnect_checks"].curve("default", 330.0), m["interconnect_checks"].curve("p2p_disabled", 20.0)], ranks=8)),
    ("p2p-unavailable", lambda m: m["interconnect_checks"]._unavailable("p2p", "1 GPU(s) visible: no pair to measure")),
    ("collective-cpu", lambda m: m["interconnect_checks"].collective(
        [m["interconnect_checks"].curve("default", 1.0)], kind="cpu", link_classes=())),
    ("load", lambda m: m["load_checks"].load([m["load_checks"].gpu()])),
    ("load-did-not-rise", lambda m: m["load_checks"].load([m["load_checks"].gpu(basis="did_not_rise")])),
    ("load-thermal", lambda m: m["load_checks"].load([m["load_checks"].gpu(slowdown=("hw_thermal_slowdown",))])),
    ("load-over-power", lambda m: m["load_checks"].load([m["load_checks"].gpu(fraction_over=0.1)])),
    ("load-stranger", lambda m: m["load_checks"].load([m["load_checks"].gpu()], unexpected=[
        {"pid": 4242, "name": "python", "gpus": [m["load_checks"].GPU0]}], own_listed=False)),
    ("load-idle-at-max", lambda m: m["load_checks"].load([m["load_checks"].gpu(basis="idle_at_max")])),
    ("load-clock-unknown", lambda m: m["load_checks"].load([m["load_checks"].gpu(basis="unknown")])),
    ("toolchain", lambda m: m["toolchain_checks"].toolchain([
        m["toolchain_checks"].record("driver_supports_cuda_build", "fail", "driver supports CUDA 12.4, torch is built for 13.0",
                                     "Install a driver of the R580 branch or newer, or a torch build for CUDA <= 12.4.",
                                     **m["toolchain_checks"].DRIVER_CUDA_12_4),
        m["toolchain_checks"].record("nccl_loads", "pass", "NCCL 2.28.9 loads"),
        m["toolchain_checks"].record("nvml_cuda_agree", "unavailable", "not decided: CUDA did not answer within 120 s",
                                     m["toolchain_checks"].CUDA_HANGS, **m["toolchain_checks"].CUDA_SILENT),
        m["toolchain_checks"].record("no_distorting_environment", "fail", "set: CUDA_LAUNCH_BLOCKING",
                                     "Unset CUDA_LAUNCH_BLOCKING before measuring.", **m["toolchain_checks"].LAUNCH_BLOCKING_SET)])),
    ("toolchain-torch-without-cuda", lambda m: m["toolchain_checks"].toolchain([
        m["toolchain_checks"].record("nccl_loads", "unavailable", "not decided: torch built without CUDA",
                                     m["toolchain_checks"].CUDA_TORCH, **m["toolchain_checks"].TORCH_WITHOUT_CUDA)])),
    ("membw-reader-entry", lambda m: _with_devices(m["helpers"].recorded("membw"),
                                                   [m["measurement_readers"].membw_entry()])),
    ("hostbw-reader-device", lambda m: _with_devices(m["helpers"].recorded("hostbw"),
                                                     [m["measurement_readers"].hostbw_device()])),
    ("gemm-reader-entry", lambda m: _with_devices(m["helpers"].recorded("gemm", m["helpers"].H200X1_RUN),
                                                  [m["measurement_readers"].gemm_entry()])),
]


@pytest.mark.parametrize("build", [build for unused_id, build in JUDGE_BUILT], ids=[name for name, unused_build in JUDGE_BUILT])
def test_every_result_the_judge_tests_build_is_valid(judge_tests, build):
    assert envelope_problems(build(judge_tests)) == []
