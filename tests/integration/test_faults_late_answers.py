"""Slow is not unreachable (issue 45, point 4). On the 200-host test fleet with a loaded controller, 14 healthy hosts
were `unreachable`: "the host stopped answering: no answer within 75 s while waiting for the running probe", while
their sshd served other hosts the whole time. Here the host's Python answers the engine's wait for a running probe
late (tests/fleet/faults/late_answers.py) while the ssh connection lives (its keepalives are answered), with the real
`ansible-playbook validate.yml` over SSH:

- once: the engine asks again and the probe's result is stored, with a note of the late wait and its times;
- every time: the probe is `timeout` past its job's limit, with the measured times, never `unreachable`;

and the run is not failed for a host not reached (exit 0 in a report-only run).
"""
import json
import os
import sys

FAULTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fleet")
if FAULTS_DIR not in sys.path:
    sys.path.insert(0, FAULTS_DIR)

from faults import faulty_python, late_answers, runs  # noqa: E402  pylint: disable=wrong-import-position

HEALTH = ("-e", json.dumps({"gpufleet_profile": "health", "probe_params": {"health": {"cuda_init": False}}, "gpufleet_gate": False}))
LATE = "wait for the running probe went unanswered while the connection lived (its keepalives were answered)"
ALWAYS_LIMIT_S = 6  # the job is still running when first asked after (faulty_python's slow sleeps 8 s first)


def test_a_wait_answered_late_on_a_live_connection_is_asked_again_never_unreachable(netns_fleet, tmp_path):
    fleet = netns_fleet(hosts=3, prefix="fxlate")
    good, once, always = fleet.names
    slow = {"gpufleet_python": faulty_python.make_interpreter(tmp_path / "python", "slow"), "probe_progress_interval": 1}
    host_vars = {
        once: dict(slow, ansible_python_interpreter=late_answers.make_interpreter(tmp_path / "once", "once")),
        always: dict(slow, ansible_python_interpreter=late_answers.make_interpreter(tmp_path / "always", "always"),
                     probe_timeouts={"health": ALWAYS_LIMIT_S}),
    }
    results = tmp_path / "results"
    code, output = runs.run_validate(fleet, results, *HEALTH, host_vars=host_vars, run_id="late")
    run_dir = str(results / "late")
    runs.assert_every_file_complete(run_dir)
    assert code == 0, output
    assert late_answers.late_waits(str(tmp_path / "once")) == 1 and late_answers.late_waits(str(tmp_path / "always")) >= 2
    runs.assert_validated(run_dir, good, probes=("health",))
    runs.assert_validated(run_dir, once, probes=("health",))
    answered = runs.envelope_of(run_dir, once, "health")
    (note,) = [note for note in answered.get("notes", []) if LATE in note]
    assert note.startswith("1 " + LATE) and note.endswith(", and then answered"), note
    assert "a call given 61 s (controller load average" in note, note
    timed_out = runs.envelope_of(run_dir, always, "health")
    assert timed_out["status"] == "timeout", timed_out
    assert ("the probe module did not report back within %d s although the probe's own limit is %d s"
            % (ALWAYS_LIMIT_S + 120, ALWAYS_LIMIT_S)) in timed_out["reason"], timed_out["reason"]
    assert ("2 waits for the running probe went unanswered while the connection lived" in timed_out["reason"]
            or "3 waits for the running probe went unanswered while the connection lived" in timed_out["reason"]), timed_out["reason"]
    assert all(runs.fleet_host(run_dir, name)["verdict"] != "unreachable" for name in fleet.names)
    assert "not reached (probe" not in output, output
