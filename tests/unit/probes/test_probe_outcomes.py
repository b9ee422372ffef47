"""Every probe's status and reason, pinned word for word in the four cases of its items: all measured (ok), some
failed, all failed, none. The words are those the probes wrote before they shared probelib.outcome.decide and
probelib.device_outcome (the stored results and the reports depend on them): this file passed, with the same expected
values, against each probe's own status_of/reason_of before."""
import ast
import os

import pytest

import fusion
import gemm
import health
import hostbw
import load
import membw
import precision
from probe_packages.collective import outcome as collective_outcome
from probe_packages.p2p import matrix
from probelib import device_outcome
from probelib.fields import SectionErrors
from probelib.nvml.access import NvmlSession
from probelib.outcome import NOTHING_MEASURED

PROBES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "probes"))


def _device(index, status, error=None, problems=()):
    entry = {"device": {"kind": "cuda", "index": index, "name": "H200"}, "status": status, "problems": list(problems)}
    if error is not None:
        entry["error"] = {"type": "RuntimeError", "message": error}
    return entry


DEVICE_CASES = [
    ("all ok", [_device(0, "ok"), _device(1, "ok")], "ok", ""),
    ("some failed", [_device(0, "ok"), _device(1, "partial", problems=["2 MiB failed", "4 MiB failed"])],
     "partial", "cuda:1 (H200) partial: 2 MiB failed; 4 MiB failed"),
    ("all failed", [_device(0, "error", "lost", ["lost", "RuntimeError: lost"]), _device(1, "error", "gone")],
     "error", "cuda:0 (H200) error: lost; RuntimeError: lost; cuda:1 (H200) error: gone"),
    ("none", [], "error", NOTHING_MEASURED),
]


@pytest.mark.parametrize("case, results, status, reason", DEVICE_CASES, ids=[case[0] for case in DEVICE_CASES])
def test_per_device_probes(case, results, status, reason):
    """membw and fusion decide through the one per-device helper (each wrote its own copy of it before)."""
    assert device_outcome.decide(results) == (status, reason), case


def test_no_probe_words_its_status_and_reason_apart():
    """Each probe decides its status and reason in one call (probelib.outcome.decide, or device_outcome.decide for the
    per-device probes), never through its own status_of and reason_of pair: before, 10 files held such a pair, and
    membw's and fusion's were the same 27 lines."""
    pairs = []
    for folder, subfolders, files in os.walk(PROBES):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(files):
            path = os.path.join(folder, name)
            if not name.endswith(".py") or path == os.path.join(PROBES, "probelib", "outcome.py"):
                continue
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), path)
            pairs += [os.path.relpath(path, PROBES) for node in ast.walk(tree)
                      if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr in ("status_of", "reason_of")]
    assert pairs == []
    assert membw.device_outcome is device_outcome and fusion.device_outcome is device_outcome
    assert not any(hasattr(probe, "describe_device") for probe in (membw, fusion))


def _gemm_device(tflops):
    return {"results": [{"measurement": {"tflops": 1.0} if tflops else {"unavailable": "skipped"}}]}


def _gemm_error(index):
    return {"device_index": index, "dtype": "fp16", "case": "sq", "error": "OOM"}


def _gemm(devices, errors):
    return gemm.outcome_of({"devices": devices, "errors": errors})


def _hostbw(entries, errors):
    return hostbw.outcome_of(entries, errors)


def _load(gpus, errors):
    return load.outcome_of({"gpus": gpus, "errors": errors})


def _precision(tensors, errors):
    return precision.outcome_of(tensors, errors)


def _p2p(pairs, errors):
    return matrix.run_outcome(pairs, errors)


def _collective(curves, errors):
    return collective_outcome.outcome_of(curves, errors)


HOSTBW_ERRORS = [{"device": "cuda:%d" % index, "what": "h2d pinned", "error": "boom"} for index in range(2)]
LOAD_ERRORS = [{"gpu": 0, "what": "load", "error": "OOM"}, {"gpu": None, "what": "sampling", "error": "late"}]
PRECISION_ERRORS = [{"tensor": name, "what": "read", "error": "E"} for name in ("w", "b")]
P2P_ERRORS = [{"pair": pair, "what": "peer_access", "error": "no peer access"} for pair in ("0->1", "1->0")]
COLLECTIVE_ERRORS = [{"curve": curve, "what": "sweep", "error": "rank 1 failed"} for curve in ("default", "p2p_disabled")]

# (probe, case, items, errors, status, reason): "some failed" measured one item and one failed; "all failed" measured
# none and each item failed.
ERROR_LIST_CASES = [
    (_gemm, "all ok", [_gemm_device(True), _gemm_device(True)], [], "ok", ""),
    (_gemm, "some failed", [_gemm_device(True), _gemm_device(False)], [_gemm_error(1)],
     "partial", "what failed: device 1 fp16 sq: OOM"),
    (_gemm, "all failed", [_gemm_device(False), _gemm_device(False)], [_gemm_error(0), _gemm_error(1)],
     "error", "what failed: device 0 fp16 sq: OOM; device 1 fp16 sq: OOM"),
    (_gemm, "none", [], [], "error", NOTHING_MEASURED),

    (_hostbw, "all ok", [{"results": [{"median_gbps": 50.0}]}] * 2, [], "ok", ""),
    (_hostbw, "some failed", [{"results": [{"median_gbps": 50.0}]}, {"results": []}], HOSTBW_ERRORS[1:],
     "partial", "failed: cuda:1 h2d pinned (boom)"),
    (_hostbw, "all failed", [{"results": []}] * 2, HOSTBW_ERRORS,
     "error", "failed: cuda:0 h2d pinned (boom); cuda:1 h2d pinned (boom)"),
    (_hostbw, "none", [], [], "error", NOTHING_MEASURED),

    (_load, "all ok", [{"load": {"achieved_tflops": 600.0}}] * 2, [], "ok", ""),
    (_load, "some failed", [{"load": {"achieved_tflops": 600.0}}, {"load": {"achieved_tflops": {"unavailable": "x"}}}],
     LOAD_ERRORS[:1], "partial", "failed: GPU 0 load (OOM)"),
    (_load, "all failed", [{"load": {"achieved_tflops": {"unavailable": "x"}}}] * 2, LOAD_ERRORS,
     "error", "failed: GPU 0 load (OOM); sampling (late)"),
    (_load, "none", [], [], "error", NOTHING_MEASURED),

    (_precision, "all ok", [{"name": "w", "formats": []}, {"name": "b", "formats": []}], [], "ok", ""),
    (_precision, "some failed", [{"name": "w", "formats": []}, {"name": "b", "error": "E"}], PRECISION_ERRORS[1:],
     "partial", "failed: b read (E)"),
    (_precision, "all failed", [{"name": "w", "error": "E"}, {"name": "b", "error": "E"}], PRECISION_ERRORS,
     "error", "failed: w read (E); b read (E)"),
    (_precision, "none", [], [], "error", NOTHING_MEASURED),

    (_p2p, "all ok", [{"pair": "0->1", "unidirectional": {}}, {"pair": "1->0", "unidirectional": {}}], [], "ok", ""),
    (_p2p, "some failed", [{"pair": "0->1", "unidirectional": {}}, {"pair": "1->0"}], P2P_ERRORS[1:],
     "partial", "1 pair(s) failed: 1->0 peer_access (no peer access)"),
    (_p2p, "all failed", [{"pair": "0->1"}, {"pair": "1->0"}], P2P_ERRORS,
     "error", "2 pair(s) failed: 0->1 peer_access (no peer access); 1->0 peer_access (no peer access)"),
    (_p2p, "none", [], [], "error", NOTHING_MEASURED),

    (_collective, "all ok", [{"name": "default", "sweep": [{}]}, {"name": "p2p_disabled", "sweep": [{}]}], [], "ok", ""),
    (_collective, "some failed", [{"name": "default", "sweep": [{}]}, {"name": "p2p_disabled", "sweep": []}],
     COLLECTIVE_ERRORS[1:], "partial", "failed: curve p2p_disabled, sweep: rank 1 failed"),
    (_collective, "all failed", [{"name": "default", "sweep": []}, {"name": "p2p_disabled", "sweep": []}],
     COLLECTIVE_ERRORS, "error", "failed: curve default, sweep: rank 1 failed; curve p2p_disabled, sweep: rank 1 failed"),
    (_collective, "none", [], [], "error", NOTHING_MEASURED),
]


@pytest.mark.parametrize("decide, case, items, errors, status, reason", ERROR_LIST_CASES,
                         ids=["%s-%s" % (case[0].__name__.strip("_"), case[1]) for case in ERROR_LIST_CASES])
def test_error_list_probes(decide, case, items, errors, status, reason):
    assert decide(items, errors) == (status, reason), case


def _sections(*failing):
    errors = SectionErrors()
    for name in failing:
        errors.run(name, lambda: 1 / 0)
    return errors


def _health(usable, errors):
    session = NvmlSession()
    session.reason = "" if usable else "NVML cannot initialise: x"
    return health.outcome_of(usable, session, errors)


HEALTH_CASES = [
    ("all ok", True, [], "ok", ""),
    ("some failed", True, ["gpus"], "partial", "sections that failed: gpus (ZeroDivisionError: division by zero)"),
    ("all failed", False, ["gpus", "topology"], "unavailable",
     "NVML cannot initialise: x; sections that failed: gpus (ZeroDivisionError: division by zero), "
     "topology (ZeroDivisionError: division by zero)"),
    ("none", False, [], "unavailable", "NVML cannot initialise: x"),
]


@pytest.mark.parametrize("case, usable, failing, status, reason", HEALTH_CASES, ids=[case[0] for case in HEALTH_CASES])
def test_health_sections(case, usable, failing, status, reason):
    assert _health(usable, _sections(*failing)) == (status, reason), case
