"""One rule for the envelope's status and reason (probelib.outcome), and every probe deciding by it: a result that
measured nothing is never ok, and every status but ok has a reason (the envelope schema requires both)."""
import pytest

import gemm
import health
import hostbw
import load
import membw
import precision
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probelib import outcome
from probelib.collective.outcome import reason_of as collective_reason, status_of as collective_status
from probelib.fields import SectionErrors
from probelib.nvml.access import NvmlSession
from probelib.outcome import NOTHING_MEASURED
from probelib.p2p.matrix import run_reason, run_status
from probelib.runner import ProbeResult, build_envelope


def _words(item):
    return "<%s>" % item


def test_status_from_what_failed_and_what_was_measured():
    assert outcome.status_of(failed=False, measured=True) == "ok"
    assert outcome.status_of(failed=True, measured=True) == "partial"
    assert outcome.status_of(failed=True, measured=False) == "error"
    assert outcome.status_of(failed=False, measured=False) == "error"
    assert outcome.status_of(failed=False, measured=False, unmeasured="unavailable") == "unavailable"


def test_reason_from_the_failed_items():
    assert outcome.reason_of([], _words) == ""
    assert outcome.reason_of(["a", "b"], _words) == "failed: <a>; <b>"
    assert outcome.reason_of(["a", "b"], _words, "what broke: ", separator=", ") == "what broke: <a>, <b>"
    assert outcome.reason_of(list("abcd"), _words, limit=2) == "failed: <a>; <b> (and 2 more)"
    assert outcome.reason_of(list("ab"), _words, limit=2) == "failed: <a>; <b>"
    assert outcome.reason_of(list("abc"), _words, "", limit=1, more=" +%d") == "<a> +2"


def test_a_reason_when_nothing_was_measured():
    assert outcome.reason_of([], _words, measured=False) == NOTHING_MEASURED
    assert outcome.reason_of(["a"], _words, measured=False) == "failed: <a>"
    assert outcome.reason_of([], _words, measured=False, unmeasured_because="no NVML") == "no NVML"
    assert outcome.reason_of(["a"], _words, measured=False, unmeasured_because="no NVML") == "no NVML; failed: <a>"


@pytest.mark.parametrize("status, reason", [
    (outcome.status_of(False, False), outcome.reason_of([], _words, measured=False)),
    (outcome.status_of(True, False), outcome.reason_of(["a"], _words, measured=False)),
    (outcome.status_of(True, True), outcome.reason_of(["a"], _words)),
    (outcome.status_of(False, True), outcome.reason_of([], _words)),
])
def test_every_pair_is_a_valid_envelope(status, reason):
    schema_validator("envelope.schema.json").validate(build_envelope("x", ProbeResult(status, {}, reason), "2026-01-01T00:00:00+00:00", 0.0))


# The edge cases the shared rule changed: each failed before it (a status of ok, or an empty reason beside error).

def test_hostbw_that_measured_no_copy_is_not_ok():
    entries = [{"kind": "cuda", "index": 0, "results": []}]
    assert hostbw.status_of(entries, []) == "error"  # was ok
    assert hostbw.reason_of(entries, []) == NOTHING_MEASURED


def test_precision_that_measured_no_tensor_is_not_ok():
    assert precision.status_of([], []) == "error"  # was ok
    assert precision.reason_of([], []) == NOTHING_MEASURED


def test_load_without_a_rate_is_not_ok():
    data = {"gpus": [{"load": {"achieved_tflops": {"unavailable": "no checkpoint was reached"}}}], "errors": []}
    assert load.status_of(data) == "error"  # was ok
    assert load.reason_of(data) == NOTHING_MEASURED


def test_collective_curves_without_a_point_are_not_ok():
    curves = [{"name": "default", "sweep": []}]
    assert collective_status(curves, []) == "error"  # was ok
    assert collective_reason(curves, []) == NOTHING_MEASURED


def test_p2p_pairs_without_a_measurement_are_not_ok():
    pairs = [{"pair": "0->1", "src": 0, "dst": 1, "peer_access": True}]
    assert run_status(pairs, []) == "error"  # was ok
    assert run_reason(pairs, []) == NOTHING_MEASURED


def test_gemm_that_measured_nothing_says_so():
    data = {"devices": [{"results": [{"measurement": {"unavailable": "skipped"}}]}], "errors": []}
    assert gemm.status_of(data) == "error"
    assert gemm.reason_of(data) == NOTHING_MEASURED  # was "", which the envelope refuses beside error


def test_membw_without_a_device_says_so():
    assert membw.status_of([]) == "error"
    assert membw.reason_of([]) == NOTHING_MEASURED  # was ""


def test_health_without_nvml_and_without_words_for_it_says_so():
    assert health.status_of(False, SectionErrors()) == "unavailable"
    assert health.reason_of(False, NvmlSession(), SectionErrors()) == NOTHING_MEASURED  # was ""


# The reasons the probes wrote before, word for word.

def test_the_probes_reasons_are_worded_as_before():
    entries = [{"results": [{"median_gbps": 50.0}]}]
    errors = [{"device": "cuda:0", "what": "h2d pinned", "error": "boom"}, {"device": "cuda:1", "what": "device", "error": "x"}]
    assert hostbw.reason_of(entries, errors) == "failed: cuda:0 h2d pinned (boom); cuda:1 device (x)"
    assert hostbw.status_of(entries, errors) == "partial" and hostbw.status_of(entries, []) == "ok"

    tensors = [{"name": "w", "formats": []}]
    errors = [{"tensor": "w", "what": "fp8_e4m3", "error": "E"}]
    assert precision.reason_of(tensors, errors) == "failed: w fp8_e4m3 (E)" and precision.status_of(tensors, errors) == "partial"

    data = {"gpus": [{"load": {"achieved_tflops": 600.0}}],
            "errors": [{"gpu": 1, "what": "load", "error": "OOM"}, {"gpu": None, "what": "sampling", "error": "late"}]}
    assert load.reason_of(data) == "failed: GPU 1 load (OOM); sampling (late)" and load.status_of(data) == "partial"

    data = {"devices": [{"results": [{"measurement": {"tflops": 1.0}}]}],
            "errors": [{"device_index": 0, "dtype": "fp16" if index % 2 else "", "case": "sq" if index % 3 else "", "error": "e%d" % index}
                       for index in range(7)]}
    assert gemm.reason_of(data) == ("what failed: device 0: e0; device 0 fp16 sq: e1; device 0 sq: e2; device 0 fp16: e3; "
                                    "device 0 sq: e4 (and 2 more)")
    assert gemm.status_of(data) == "partial"

    results = [{"device": {"kind": "cpu", "index": 0, "name": "CPU"}, "status": "ok"},
               {"device": {"kind": "cpu", "index": 1, "name": "CPU"}, "status": "partial", "error": None,
                "problems": ["2 MiB failed", "4 MiB failed"]},
               {"device": {"kind": "cuda", "index": 2, "name": "H200"}, "status": "error",
                "error": {"type": "RuntimeError", "message": "lost"}, "problems": ["lost", "RuntimeError: lost"]}]
    assert membw.reason_of(results) == ("cpu:1 (CPU) partial: 2 MiB failed; 4 MiB failed; "
                                        "cuda:2 (H200) error: lost; RuntimeError: lost")
    assert membw.status_of(results) == "partial" and membw.status_of(results[:1]) == "ok"
    assert membw.status_of(results[2:]) == "error"

    errors = SectionErrors()
    errors.run("gpus", lambda: 1 / 0)
    errors.run("topology", lambda: {}["links"])
    session = NvmlSession()
    session.reason = "NVML cannot initialise: x"
    assert health.reason_of(True, session, errors) == ("sections that failed: gpus (ZeroDivisionError: division by zero), "
                                                       "topology (KeyError: 'links')")
    assert health.reason_of(False, session, errors).startswith("NVML cannot initialise: x; sections that failed: gpus (")
    assert health.reason_of(False, session, SectionErrors()) == "NVML cannot initialise: x"
    assert health.status_of(True, errors) == "partial" and health.status_of(True, SectionErrors()) == "ok"
