"""A result is bound to its start (issue 45, point 1): the controller gives each start of a probe a nonce, the probe
writes it back (probelib/runner.py), and a result without it, or one that says it started before this start, is an
error that says what it claimed, its text kept beside it. A new host's probe wrote another host's stored result of an
earlier run byte for byte, and the engine overwrote its host and run id without a word: the host passed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.module_utils import probe_envelope
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_envelope import NONCE_VARIABLE, interpret
from ansible_collections.gpufleet.validation.plugins.module_utils.probe_process import ProcessOutcome
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_problems
from probelib import runner

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDED = os.path.join(os.path.dirname(os.path.dirname(HERE)), "fixtures", "health_h200x2_ok_by_the_action.json")
NONCE = "0123456789abcdef0123456789abcdef"
STARTED = "2026-12-06T03:00:00+00:00"


def fresh(**changes):
    envelope = {"schema_version": "1", "probe": "health", "host": "gpu-e", "status": "ok", "started": STARTED,
                "duration_s": 1.0, "command": [], "environment": {}, "reason": "", "data": {}, "nonce": NONCE}
    envelope.update(changes)
    return {key: value for key, value in envelope.items() if value is not None}


def interpreted(envelope, nonce=NONCE, started=STARTED):
    outcome = ProcessOutcome(["python3", "health.py"], 0, False, 1.0)
    return interpret("health", "", outcome, json.dumps(envelope).encode("utf-8"), "", started, "python3", nonce=nonce)


def test_a_result_of_this_start_is_taken_and_keeps_its_nonce():
    envelope, raw = interpreted(fresh())
    assert envelope["status"] == "ok" and envelope["nonce"] == NONCE and raw is None


def test_another_host_s_stored_result_replayed_byte_for_byte_is_an_error_saying_what_it_claimed():
    with open(RECORDED, encoding="utf-8") as handle:
        recorded = json.load(handle)
    envelope, raw = interpreted(recorded)
    assert envelope["status"] == "error" and envelope["data"] == {}
    assert envelope["reason"].startswith('the result does not answer this start of the probe (it carries no nonce): it '
                                         'claims host "localhost", started "2026-11-30T02:53:48+00:00"')
    assert json.loads(raw) == recorded and envelope["nonce"] == NONCE


def test_a_result_with_another_start_s_nonce_is_an_error():
    envelope, unused_raw = interpreted(fresh(nonce="f" * 32))
    assert envelope["status"] == "error" and "(its nonce is another start's)" in envelope["reason"]


def test_a_result_that_started_before_this_start_is_an_error_even_with_the_nonce():
    """The red team's second row: a fresh nonce written into an old result, or a copied result with its start kept."""
    envelope, unused_raw = interpreted(fresh(started="2026-12-06T02:57:30+00:00"))
    assert envelope["status"] == "error"
    assert envelope["reason"].startswith("the result says it started at 2026-12-06T02:57:30+00:00, 150 s before this start")
    within, unused_raw = interpreted(fresh(started="2026-12-06T02:59:59+00:00"))
    assert within["status"] == "ok", "whole seconds: a probe may read the second before its start"


def test_without_a_nonce_given_nothing_is_asked():
    """A module run not started by the action (a test, an older controller) is judged as before."""
    envelope, unused_raw = interpreted(fresh(nonce=None), nonce=None)
    assert envelope["status"] == "ok" and "nonce" not in envelope


def test_the_runner_writes_back_the_nonce_it_was_given(tmp_path):
    out = tmp_path / "result.json"
    script = ("import sys; sys.path.insert(0, %r)\n"
              "from probelib.runner import ProbeResult, main\n"
              "sys.exit(main('toy', 'a toy', lambda params: ProbeResult('ok', {}, ''), spec={}))\n"
              % os.path.dirname(os.path.dirname(runner.__file__)))
    for environ, expected in ((dict(os.environ, **{NONCE_VARIABLE: NONCE}), NONCE), (dict(os.environ), None)):
        if expected is None:
            environ.pop(NONCE_VARIABLE, None)
        subprocess.run([sys.executable, "-c", script, "--out", str(out)], env=environ, check=True)
        assert json.loads(out.read_text()).get("nonce") == expected


def test_the_probes_copy_of_the_variable_is_the_module_s():
    assert runner.NONCE_VARIABLE == probe_envelope.NONCE_VARIABLE


@pytest.mark.parametrize("value", ["", "g" * 32, "0" * 31])
def test_the_stored_nonce_is_32_hex_digits(value):
    envelope = fresh(nonce=value)
    assert any("nonce" in problem for problem in schema_problems(envelope, "envelope.schema.json", "envelope"))
    assert schema_problems(fresh(), "envelope.schema.json", "envelope") == []
