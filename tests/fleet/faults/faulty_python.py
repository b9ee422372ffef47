"""A stand-in for a host's Python that misbehaves like a broken probe, for the fault tests (tests/integration/test_faults*.py).

The probe engine runs ``[python, <probe>.py, --params F, --out G]`` on the host, where python is the host's
``gpufleet_python``. A fault test gives one host of its fleet ``gpufleet_python: make_interpreter(folder, fault)``: a
one-line executable whose shebang runs this file under the controller's Python (the fleet's hosts share the
controller's file system), so the kernel runs

    <controller python> faulty_python.py <folder>/<fault> <folder>/... <probe>.py --params F --out G

The fault hits the probe named ``health`` only; any other probe is handed to the real Python (os.execv), so the faulty
host's other probes run for real and the test sees the play go on for them. Faults:

    hang          starts a child that ignores SIGTERM, records both pids in <folder>/hang.pids, then sleeps for an hour
    crash         says something on stderr, then kills itself with SIGSEGV
    garbage       prints bytes that are no JSON on stdout and writes no --out file
    garbage_file  prints noise on stdout and writes text that is no JSON into the --out file
    schema        writes a well-formed envelope with status ok whose data breaks the health schema
    recorded_gpus writes the 2-GPU H200 rig's recorded health data (tests/fixtures) as its own: every host with this
                  fault reports the same GPU UUIDs and serials, like inventory aliases of one machine or copied results
    duplicate_keys  runs the real probe, then rewrites its result to say "status": "error" before the probe's own
                  "status" (Python's json keeps the last: a sound result that says error would pass)
    deep          writes an envelope whose data nests DEEP_LEVELS arrays (json.loads raised RecursionError)
    replayed      writes another host's stored result of an earlier run byte for byte (the recorded H200 health
                  envelope): no nonce of this start, an old start time (issue 45)
    slow          sleeps SLOW_S, then runs the real probe: it is still running when the engine first asks after it

Every envelope a fault writes itself, but replayed's, carries the engine's nonce for this start, as a probe does.

``missing_interpreter(folder)`` is the path of an interpreter that does not exist. Standard library only; nothing
here runs a shell.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import time

TARGET_PROBE = "health"
NONCE_VARIABLE = "GPUFLEET_PROBE_NONCE"
FAULTS = ("hang", "crash", "garbage", "garbage_file", "schema", "recorded_gpus", "duplicate_keys", "deep", "replayed", "slow")
HANG_PIDS_FILE = "hang.pids"
HANG_CHILD_MARKER = "gpufleet-fault-hang-child"
GARBAGE = b"\x89PNG\r\n\x1a\n not json {{{ \xff\xfe garbage from a broken probe\n"
GARBAGE_FILE_TEXT = "Segmentation fault in libfoo.so {\"status\": \"ok\", truncated"
CRASH_STDERR = "faulty_python: about to dereference a bad pointer"
SCHEMA_BREAKING_DATA = {"platform": "not an object", "gpus": 8}
HANG_S = 3600
SLOW_S = 8
RECORDED_HEALTH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "fixtures",
                               "health_h200x2_ok_by_the_action.json")
DEEP_LEVELS = 200000


def make_interpreter(folder, fault: str, python: str | None = None) -> str:
    """Write <folder>/<fault>, an executable whose shebang runs this file with ``python`` (default: this Python)."""
    if fault not in FAULTS:
        raise ValueError("unknown fault %r (known: %s)" % (fault, ", ".join(FAULTS)))
    # imported here: the host runs this file as a script, where it is no package's module
    from .interpreter_file import write_interpreter  # pylint: disable=import-outside-toplevel
    return write_interpreter(folder, fault, __file__, python)


def missing_interpreter(folder) -> str:
    """A path where no interpreter is (its folder does not exist either)."""
    return os.path.join(os.path.abspath(str(folder)), "no-such-dir", "python3")


def hang_pids(folder) -> list:
    """The pids the hang fault recorded (the probe's, then its child's); empty when it has not started yet."""
    try:
        with open(os.path.join(str(folder), HANG_PIDS_FILE)) as handle:
            return [int(word) for word in handle.read().split()]
    except (OSError, ValueError):
        return []


def _hang(folder: str) -> None:
    child = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(%d)" % HANG_S,
         HANG_CHILD_MARKER], stdin=subprocess.DEVNULL)
    temporary = os.path.join(folder, HANG_PIDS_FILE + ".tmp")
    with open(temporary, "w") as handle:
        handle.write("%d %d\n" % (os.getpid(), child.pid))
    os.replace(temporary, os.path.join(folder, HANG_PIDS_FILE))
    time.sleep(HANG_S)


def _envelope(probe: str, data) -> dict:
    """A fresh envelope of this start: it writes back the engine's nonce, as every probe does (probelib/runner.py)."""
    envelope = {"schema_version": "1", "probe": probe, "host": "", "status": "ok",
                "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "duration_s": 0.1, "command": [], "environment": {}, "reason": "", "data": data}
    if os.environ.get(NONCE_VARIABLE):
        envelope["nonce"] = os.environ[NONCE_VARIABLE]
    return envelope


def _recorded_data() -> dict:
    with open(RECORDED_HEALTH) as handle:
        return json.load(handle)["data"]


def duplicate_keys_text(result_text: str) -> str:
    """The probe's own result with "status": "error" put before its own status: the last key would win."""
    return '{"status": "error", ' + json.dumps(json.loads(result_text))[1:]


def deep_text(probe: str) -> str:
    envelope = json.dumps(_envelope(probe, {"x": None}))
    return envelope.replace('{"x": null}', '{"x": ' + "[" * DEEP_LEVELS + "]" * DEEP_LEVELS + "}")


def run(fault: str, folder: str, probe_argv: list) -> int:
    """Misbehave as ``fault`` for the health probe; run any other probe with the real Python."""
    probe = os.path.splitext(os.path.basename(probe_argv[0]))[0] if probe_argv else ""
    if probe != TARGET_PROBE:
        os.execv(sys.executable, [sys.executable] + probe_argv)
    if fault == "slow":
        time.sleep(SLOW_S)
        os.execv(sys.executable, [sys.executable] + probe_argv)
    parser = argparse.ArgumentParser()
    parser.add_argument("--params")
    parser.add_argument("--out")
    args = parser.parse_args(probe_argv[1:])
    if fault == "hang":
        _hang(folder)
    elif fault == "crash":
        sys.stderr.write(CRASH_STDERR + "\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    elif fault == "garbage":
        sys.stdout.buffer.write(GARBAGE)
    elif fault == "garbage_file":
        print("library noise on stdout {")
        with open(args.out, "w") as handle:
            handle.write(GARBAGE_FILE_TEXT)
    elif fault == "schema":
        with open(args.out, "w") as handle:
            json.dump(_envelope(probe, SCHEMA_BREAKING_DATA), handle)
    elif fault == "recorded_gpus":
        with open(args.out, "w") as handle:
            json.dump(_envelope(probe, _recorded_data()), handle)
    elif fault == "duplicate_keys":
        code = subprocess.call([sys.executable] + probe_argv, stdin=subprocess.DEVNULL)
        with open(args.out) as handle:
            text = duplicate_keys_text(handle.read())
        with open(args.out, "w") as handle:
            handle.write(text)
        return code
    elif fault == "deep":
        with open(args.out, "w") as handle:
            handle.write(deep_text(probe))
    elif fault == "replayed":
        with open(RECORDED_HEALTH) as source, open(args.out, "w") as handle:
            handle.write(source.read())
    return 0


def main(argv: list) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: run through an interpreter file made by make_interpreter()\n")
        return 2
    wrapper = argv[1]
    return run(os.path.basename(wrapper), os.path.dirname(os.path.abspath(wrapper)), argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
