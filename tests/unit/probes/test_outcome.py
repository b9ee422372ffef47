"""One rule for the envelope's status and reason (probelib.outcome), and every probe deciding by it: a result that
measured nothing is never ok, and every status but ok has a reason (the envelope schema requires both)."""
import pytest

import gemm
import health
import hostbw
import load
import precision
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator
from probe_packages.collective.outcome import outcome_of as collective_outcome
from probe_packages.p2p.matrix import run_outcome
from probelib import outcome
from probelib import device_outcome
from probelib.fields import SectionErrors
from probelib.nvml.access import NvmlSession
from probelib.outcome import NOTHING_MEASURED
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


@pytest.mark.parametrize("failures, measured", [([], False), (["a"], False), (["a"], True), ([], True)])
@pytest.mark.parametrize("wording", [{}, {"unmeasured": "unavailable", "unmeasured_because": "no NVML"},
                                     {"separator": ", ", "limit": 1, "more": " +%d"}])
def test_decide_is_status_of_and_reason_of_together(failures, measured, wording):
    reason_wording = {key: value for key, value in wording.items() if key != "unmeasured"}
    assert outcome.decide(failures, _words, measured, "broke: ", **wording) == (
        outcome.status_of(bool(failures), measured, wording.get("unmeasured", "error")),
        outcome.reason_of(failures, _words, "broke: ", measured=measured, **reason_wording))


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
    assert hostbw.outcome_of(entries, []) == ("error", NOTHING_MEASURED)  # was ok


def test_precision_that_measured_no_tensor_is_not_ok():
    assert precision.outcome_of([], []) == ("error", NOTHING_MEASURED)  # was ok


def test_load_without_a_rate_is_not_ok():
    data = {"gpus": [{"load": {"achieved_tflops": {"unavailable": "no checkpoint was reached"}}}], "errors": []}
    assert load.outcome_of(data) == ("error", NOTHING_MEASURED)  # was ok


def test_collective_curves_without_a_point_are_not_ok():
    curves = [{"name": "default", "sweep": []}]
    assert collective_outcome(curves, []) == ("error", NOTHING_MEASURED)  # was ok


def test_p2p_pairs_without_a_measurement_are_not_ok():
    pairs = [{"pair": "0->1", "src": 0, "dst": 1, "peer_access": True}]
    assert run_outcome(pairs, []) == ("error", NOTHING_MEASURED)  # was ok


def test_gemm_that_measured_nothing_says_so():
    data = {"devices": [{"results": [{"measurement": {"unavailable": "skipped"}}]}], "errors": []}
    assert gemm.outcome_of(data) == ("error", NOTHING_MEASURED)  # the reason was "", which the envelope refuses beside error


def test_membw_without_a_device_says_so():
    assert device_outcome.decide([]) == ("error", NOTHING_MEASURED)  # the reason was ""


def test_health_without_nvml_and_without_words_for_it_says_so():
    assert health.outcome_of(False, NvmlSession(), SectionErrors()) == ("unavailable", NOTHING_MEASURED)  # the reason was ""


# The reasons the probes wrote before, word for word.

def test_the_probes_reasons_are_worded_as_before():
    entries = [{"results": [{"median_gbps": 50.0}]}]
    errors = [{"device": "cuda:0", "what": "h2d pinned", "error": "boom"}, {"device": "cuda:1", "what": "device", "error": "x"}]
    assert hostbw.outcome_of(entries, errors) == ("partial", "failed: cuda:0 h2d pinned (boom); cuda:1 device (x)")
    assert hostbw.outcome_of(entries, []) == ("ok", "")

    tensors = [{"name": "w", "formats": []}]
    errors = [{"tensor": "w", "what": "fp8_e4m3", "error": "E"}]
    assert precision.outcome_of(tensors, errors) == ("partial", "failed: w fp8_e4m3 (E)")

    data = {"gpus": [{"load": {"achieved_tflops": 600.0}}],
            "errors": [{"gpu": 1, "what": "load", "error": "OOM"}, {"gpu": None, "what": "sampling", "error": "late"}]}
    assert load.outcome_of(data) == ("partial", "failed: GPU 1 load (OOM); sampling (late)")

    data = {"devices": [{"results": [{"measurement": {"tflops": 1.0}}]}],
            "errors": [{"device_index": 0, "dtype": "fp16" if index % 2 else "", "case": "sq" if index % 3 else "", "error": "e%d" % index}
                       for index in range(7)]}
    assert gemm.outcome_of(data) == ("partial", "what failed: device 0: e0; device 0 fp16 sq: e1; device 0 sq: e2; "
                                     "device 0 fp16: e3; device 0 sq: e4 (and 2 more)")

    results = [{"device": {"kind": "cpu", "index": 0, "name": "CPU"}, "status": "ok"},
               {"device": {"kind": "cpu", "index": 1, "name": "CPU"}, "status": "partial", "error": None,
                "problems": ["2 MiB failed", "4 MiB failed"]},
               {"device": {"kind": "cuda", "index": 2, "name": "H200"}, "status": "error",
                "error": {"type": "RuntimeError", "message": "lost"}, "problems": ["lost", "RuntimeError: lost"]}]
    assert device_outcome.decide(results) == ("partial", "cpu:1 (CPU) partial: 2 MiB failed; 4 MiB failed; "
                                                         "cuda:2 (H200) error: lost; RuntimeError: lost")
    assert device_outcome.decide(results[:1]) == ("ok", "") and device_outcome.decide(results[2:])[0] == "error"

    errors = SectionErrors()
    errors.run("gpus", lambda: 1 / 0)
    errors.run("topology", lambda: {}["links"])
    session = NvmlSession()
    session.reason = "NVML cannot initialise: x"
    assert health.outcome_of(True, session, errors) == ("partial", "sections that failed: gpus (ZeroDivisionError: division by zero), "
                                                                   "topology (KeyError: 'links')")
    assert health.outcome_of(False, session, errors)[1].startswith("NVML cannot initialise: x; sections that failed: gpus (")
    assert health.outcome_of(False, session, SectionErrors()) == ("unavailable", "NVML cannot initialise: x")
    assert health.outcome_of(True, session, SectionErrors()) == ("ok", "")
