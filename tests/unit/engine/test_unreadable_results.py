"""What the report cannot read is that probe's error, and the report never blocks (issue 44, point 5).

A stored result cut in half, empty, over the size bound (a 2 GiB sparse file), a character device, a link (to /dev/zero
or to another host's result), a FIFO (in a probe's place or as an extra *.json), a failed write beside readable
results, and a host directory that is a link: each is judged as an error of that probe (<probe>.probe_status, value
"unreadable", the reason naming the file and what is wrong with it) or of the host (host.results), the gate refuses it,
and reading returns at once. Built from the rig's recorded acceptance run (docs/examples/h200x1/out-of-the-box), each
host a copy with GPUs of its own, so that the healthy copy shows that nothing else changed.

Every read that could block runs in a thread with a deadline (promptly): on a reader that opens a FIFO and waits for
a writer the test fails by its deadline instead of hanging the suite.
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import threading
import time
from xml.etree import ElementTree

import pytest

from ansible_collections.gpufleet.validation.plugins.action.report import judged_overrides
from ansible_collections.gpufleet.validation.plugins.plugin_utils.judge.model import blocks_gate
from ansible_collections.gpufleet.validation.plugins.plugin_utils.report.render import render_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.run_judgement import gate_lines, judge_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store import safe_fs
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import text_writer_below
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.previous import find_previous_results
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.read import RESULT_LIMIT_BYTES
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import stored_envelope_problems
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.stored_run import load_run
from ansible_collections.gpufleet.validation.plugins.plugin_utils.unreadable_result import UNREADABLE_VALUE, unreadable_reason

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RECORDED = os.path.join(ROOT, "docs", "examples", "h200x1", "out-of-the-box")
RUN_ID = "20261203T131515Z-856648"   # acceptance on one H200: every host copied from it passes as recorded
EARLIER_RUN_ID = "20261203T131048Z-911761"
RECORDED_UUID, RECORDED_SERIAL = "cedfa9bb", "1653724059881"
DEADLINE_S = 20.0


def promptly(job, deadline=DEADLINE_S):
    """job()'s value, run in a thread; fails (rather than hangs) when it has not returned within deadline seconds."""
    outcome = {}

    def run():
        try:
            outcome["value"] = job()
        except BaseException as exc:  # pylint: disable=broad-exception-caught
            outcome["raised"] = exc
    thread = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(deadline)
    assert not thread.is_alive(), "still reading after %.0f s: a read blocked (a FIFO opened without O_NONBLOCK?)" % deadline
    if "raised" in outcome:
        raise outcome["raised"]
    return outcome["value"], time.monotonic() - started


def copy_host(run_path, name, number, source_run=RUN_ID):
    """The recorded host as host `name` of the run at run_path: its GPUs get a UUID and serial of their own."""
    target = os.path.join(run_path, name)
    shutil.copytree(os.path.join(RECORDED, source_run, "localhost"), target)
    for file_name in os.listdir(target):
        path = os.path.join(target, file_name)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        text = text.replace(RECORDED_UUID, "%08x" % number).replace(RECORDED_SERIAL, str(int(RECORDED_SERIAL) + number))
        if file_name == "inputs.json":
            inputs = json.loads(text)
            inputs["host"] = name
            text = json.dumps(inputs)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    return target


def new_run(results, run_id=RUN_ID):
    run_path = os.path.join(str(results), run_id)
    os.makedirs(run_path)
    shutil.copy(os.path.join(RECORDED, run_id, "run.json"), run_path)
    return run_path


def replace(host_path, file_name, plant):
    path = os.path.join(host_path, file_name)
    if os.path.lexists(path):
        os.remove(path)
    plant(path)


def truncated(path):
    source = os.path.join(RECORDED, RUN_ID, "localhost", os.path.basename(path))
    with open(source, "rb") as handle:
        payload = handle.read()
    with open(path, "wb") as handle:
        handle.write(payload[:len(payload) // 2])


def empty_object(path):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{}")


def sparse_2_gib(path):
    with open(path, "wb"):
        pass
    os.truncate(path, 2 * 2 ** 30)   # as `truncate -s 2G`: no block is written


def character_device(path):
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))   # what /dev/null is
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD")


def link_to_dev_zero(path):
    os.symlink("/dev/zero", path)


def link_to_another_hosts_result(path):
    os.symlink(os.path.join(os.path.dirname(os.path.dirname(path)), "healthy", os.path.basename(path)), path)


# (case, file planted, how, words the probe_status check's reason holds)
HOSTILE = [
    ("truncated", "health.json", truncated, "truncated/health.json: Unterminated string"),
    ("empty", "membw.json", empty_object, "empty/membw.json: an empty JSON object, not an envelope"),
    ("sparse", "gemm.json", sparse_2_gib, "sparse/gemm.json is 2147483648 bytes, over the %d-byte limit" % RESULT_LIMIT_BYTES),
    ("chardev", "membw.json", character_device, "chardev/membw.json is a character device, not a regular file"),
    ("devzero", "membw.json", link_to_dev_zero, "devzero/membw.json is a symbolic link (to /dev/zero)"),
    ("borrowed", "membw.json", link_to_another_hosts_result, "borrowed/membw.json is a symbolic link (to "),
    ("fifo", "membw.json", os.mkfifo, "fifo/membw.json is a FIFO (named pipe), not a regular file"),
    ("extrafifo", "zzz.json", os.mkfifo, "extrafifo/zzz.json is a FIFO (named pipe), not a regular file"),
]


def hostile_run(results):
    """The run: a healthy host, one host per hostile file, and a host whose directory is a link (to a healthy copy)."""
    run_path = new_run(results)
    copy_host(run_path, "healthy", 1)
    for number, (case, file_name, plant, unused_words) in enumerate(HOSTILE, start=2):
        replace(copy_host(run_path, case, number), file_name, plant)
    elsewhere = copy_host(os.path.dirname(str(results)), "elsewhere", 99)   # beside the results directory, not a run
    os.symlink(elsewhere, os.path.join(run_path, "linked"))
    return run_path


def judged(results, run_path, hosts=()):
    def job():
        run = load_run(run_path, hosts, {})
        return run, judge_run(run, str(results), judged_overrides(run, {}), workers=1)
    return promptly(job)[0]


def probe_status(verdict, probe):
    found = [check for check in verdict.checks if check.id == "%s.probe_status" % probe]
    assert len(found) == 1, [check.id for check in verdict.checks]
    return found[0]


@pytest.mark.parametrize("case,file_name,plant,words", HOSTILE, ids=[case[0] for case in HOSTILE])
def test_an_unreadable_result_is_that_probes_error_and_the_gate_refuses_the_host(tmp_path, case, file_name, plant, words):
    results = tmp_path / "results"
    run_path = new_run(results)
    copy_host(run_path, "healthy", 1)
    replace(copy_host(run_path, case, 2), file_name, plant)
    unused_run, judgement = judged(results, run_path)
    verdict = judgement.hosts[case]
    check = probe_status(verdict, file_name[:-len(".json")])
    assert check.status == "error" and check.value == UNREADABLE_VALUE, check
    assert words in check.reason, check.reason
    assert check.reason.startswith("the %s result cannot be judged: result file unreadable: " % file_name[:-5]), check.reason
    assert check.reason.endswith("probe the host again in a new run to replace it"), check.reason
    assert not check.because, "an unreadable file is its own root cause, never folded under another"
    assert verdict.verdict == "error" and blocks_gate(verdict), (verdict.verdict, verdict.reasons)
    assert any(line.startswith("%s: error - " % case) for line in gate_lines(judgement))
    # The healthy copy beside it is judged as recorded: nothing of the hostile file leaks into it.
    healthy = judgement.hosts["healthy"]
    assert healthy.verdict != "error" and not [c for c in healthy.checks if c.value == UNREADABLE_VALUE], healthy.reasons


def test_a_host_directory_that_is_a_link_is_a_host_in_error_without_an_inventory(tmp_path):
    results = tmp_path / "results"
    run_path = new_run(results)
    copy_host(run_path, "healthy", 1)
    os.symlink(copy_host(str(tmp_path), "elsewhere", 2), os.path.join(run_path, "linked"))
    run, judgement = judged(results, run_path)
    assert sorted(host.name for host in run.hosts) == ["healthy", "linked"] and not run.stray
    verdict = judgement.hosts["linked"]
    assert verdict.verdict == "error" and blocks_gate(verdict)
    assert verdict.reasons == ["host.results: its results directory %s/linked is a symbolic link (to %s): nothing was read or "
                               "written through it; remove the link and run the host again" % (RUN_ID, tmp_path / "elsewhere")]


def test_a_failed_write_beside_readable_results_is_that_probes_error(tmp_path):
    """Before: the write failure's entry was left out of what the judge read, so the host passed on its other results."""
    results = tmp_path / "results"
    run_path = new_run(results)
    host = copy_host(run_path, "gpu-a01", 1)
    os.remove(os.path.join(host, "membw.json"))
    with open(os.path.join(host, "membw.write-failed-ENOSPC"), "wb"):
        pass
    unused_run, judgement = judged(results, run_path)
    check = probe_status(judgement.hosts["gpu-a01"], "membw")
    assert check.status == "error" and check.value == UNREADABLE_VALUE
    assert "write failed: ENOSPC No space left on device" in check.reason
    assert judgement.hosts["gpu-a01"].verdict == "error"


def test_reading_a_fifo_or_a_sparse_file_returns_at_once_with_what_it_is(tmp_path):
    os.mkfifo(str(tmp_path / "membw.json"))
    sparse_2_gib(str(tmp_path / "gemm.json"))
    fd = os.open(str(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name, words in (("membw.json", "is a FIFO (named pipe), not a regular file"), ("gemm.json", "over the")):
            def job(name=name):
                with pytest.raises(OSError) as raised:
                    safe_fs.read_file_at(fd, name, RESULT_LIMIT_BYTES, "gpu-a01/" + name)
                return str(raised.value)
            text, seconds = promptly(job)
            assert words in text and text.startswith("gpu-a01/" + name), text
            assert seconds < 1.0, seconds
    finally:
        os.close(fd)


def test_a_fifo_swapped_in_after_the_type_check_is_refused_by_its_fstat(tmp_path, monkeypatch):
    """The check before opening is for devices (opening one can act on it); O_NONBLOCK and the fstat are what close the
    race: a FIFO that takes the name between the two opens at once and is refused."""
    os.mkfifo(str(tmp_path / "membw.json"))
    monkeypatch.setattr(safe_fs, "_lstat_at", lambda dir_fd, name: None)   # as if it were not there yet when looked at
    fd = os.open(str(tmp_path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        def job():
            with pytest.raises(OSError, match="is a FIFO"):
                safe_fs.read_file_at(fd, "membw.json", RESULT_LIMIT_BYTES)
        promptly(job)
    finally:
        os.close(fd)


def test_the_previous_run_reader_neither_hangs_nor_crashes_on_hostile_files(tmp_path):
    results = tmp_path / "results"
    earlier = new_run(results, EARLIER_RUN_ID)
    host = copy_host(earlier, "gpu-a01", 1, EARLIER_RUN_ID)
    replace(host, "membw.json", os.mkfifo)
    replace(host, "gemm.json", sparse_2_gib)
    replace(host, "health.json", link_to_dev_zero)
    os.mkfifo(os.path.join(host, "zzz.json"))
    copy_host(new_run(results), "gpu-a01", 1)
    wanted = {"gpu-a01": ["health", "membw", "gemm", "hostbw"]}
    found, seconds = promptly(lambda: find_previous_results(
        str(results), RUN_ID, ["gpu-a01"], check_envelope=stored_envelope_problems, wanted=wanted))
    assert seconds < 10, seconds
    assert found.run_ids == {"gpu-a01": EARLIER_RUN_ID}
    problems = found.problems["gpu-a01"]
    assert "membw.json is a FIFO (named pipe), not a regular file" in problems["membw"], problems
    assert "gemm.json is 2147483648 bytes, over the" in problems["gemm"], problems
    assert "health.json is a symbolic link (to /dev/zero)" in problems["health"], problems
    assert "zzz.json is a FIFO" in problems["zzz"], problems
    assert "hostbw" in found.envelopes["gpu-a01"]   # the readable result of that run is still compared


def test_the_report_over_a_run_of_hostile_files_lists_every_host_in_error_and_finishes(tmp_path):
    """The report action's path (load_run, judge_run, render_run) over every hostile kind at once, from the run's
    directory alone (no inventory): it finishes, and fleet.json, the index and junit.xml list every host."""
    results = tmp_path / "results"
    run_path = hostile_run(results)

    def report():
        run = load_run(run_path, [], {})
        judgement = judge_run(run, str(results), judged_overrides(run, {}), workers=1)
        render_run(run_path, [], {}, text_writer_below(str(results)), judgement=judgement, loaded=run, workers=1, gated=True)
        return judgement
    judgement, unused_seconds = promptly(report, deadline=120)
    with open(os.path.join(run_path, "fleet.json"), encoding="utf-8") as handle:
        fleet = json.load(handle)
    hostile = sorted([case for case, unused_file, unused_plant, unused_words in HOSTILE] + ["linked"])
    assert sorted(fleet["hosts"]) == sorted(hostile + ["healthy"])
    for name in hostile:
        assert fleet["hosts"][name]["verdict"] == "error", (name, fleet["hosts"][name])
        assert blocks_gate(judgement.hosts[name]), name
    assert fleet["hosts"]["healthy"]["verdict"] != "error"
    with open(os.path.join(run_path, "index.html"), encoding="utf-8") as handle:
        index = handle.read()
    suites = {suite.get("name"): suite for suite in ElementTree.parse(os.path.join(run_path, "junit.xml")).getroot()}
    for name in hostile:
        assert ">%s<" % name in index, name
        assert int(suites[name].get("errors")) >= 1, name
    assert "is a FIFO (named pipe), not a regular file" in index
    assert not os.path.exists(os.path.join(str(tmp_path), "elsewhere", "dossier.html"))   # nothing written through the link


@pytest.mark.parametrize("hosts", [(), ("gpu-a01", "healthy")], ids=["no-inventory", "inventory"])
def test_a_host_whose_stored_inputs_cannot_be_read_is_a_host_in_error(tmp_path, hosts):
    """inputs.json holds the rule overrides and groups its run judged the host with: a FIFO there neither hangs the
    report nor lets the host be judged without them (before: the read hung; with no inventory the host was left out)."""
    results = tmp_path / "results"
    run_path = new_run(results)
    copy_host(run_path, "healthy", 1)
    replace(copy_host(run_path, "gpu-a01", 2), "inputs.json", os.mkfifo)
    run, judgement = judged(results, run_path, hosts)
    assert sorted(host.name for host in run.hosts) == ["gpu-a01", "healthy"] and not run.stray
    verdict = judgement.hosts["gpu-a01"]
    assert verdict.verdict == "error" and blocks_gate(verdict)
    assert verdict.reasons == ["host.results: its results are not judged: inputs.json is unreadable: gpu-a01/inputs.json is a "
                               "FIFO (named pipe), not a regular file: the store writes only regular files, so something else "
                               "put it there; it is not read: move it away (the store wrote it with the rule overrides and "
                               "groups its run judged the host with); probe the host again in a new run"], verdict.reasons
    assert judgement.hosts["healthy"].verdict != "error"


def test_a_run_record_that_is_a_fifo_does_not_hang_the_report(tmp_path):
    results = tmp_path / "results"
    run_path = new_run(results)
    copy_host(run_path, "healthy", 1)
    replace(run_path, "run.json", os.mkfifo)
    run, unused_judgement = judged(results, run_path)
    assert [host.name for host in run.hosts] == ["healthy"]


def test_a_fifo_where_an_expected_hosts_directory_should_be_is_that_hosts_error(tmp_path):
    """Before: read as a host with no result at all ("not reached"), which hid what stands there."""
    results = tmp_path / "results"
    run_path = new_run(results)
    copy_host(run_path, "healthy", 1)
    os.mkfifo(os.path.join(run_path, "gpu-b01"))
    unused_run, judgement = judged(results, run_path, ("healthy", "gpu-b01"))
    verdict = judgement.hosts["gpu-b01"]
    assert verdict.verdict == "error" and blocks_gate(verdict)
    assert verdict.reasons == ["host.results: its results directory %s/gpu-b01 is a FIFO (named pipe), not a directory: "
                               "nothing was read from it; move it away and run the host again" % RUN_ID], verdict.reasons


def test_a_system_error_is_said_with_the_file_and_its_errno():
    reason = unreadable_reason("gpu-a01/membw.json", PermissionError(errno.EACCES, "Permission denied", "membw.json"))
    assert reason == ("result file unreadable: gpu-a01/membw.json: Permission denied (EACCES); probe the host again in a "
                      "new run to replace it")


def _break_cuda_init(host_path):
    path = os.path.join(host_path, "health.json")
    with open(path, encoding="utf-8") as handle:
        envelope = json.load(handle)
    envelope["data"]["cuda_init"].update(ok=False, stage="cuInit", error="CUDA_ERROR_NO_DEVICE", reason="cuInit failed: 100")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(envelope, handle)


def test_an_unreadable_result_is_never_folded_under_a_broken_gpu_stack(tmp_path):
    """A membw that ended in error follows a failed CUDA init (the stack broke every GPU probe); a membw.json that is a
    FIFO does not: the file, not the GPU, went wrong, and the row says so on its own."""
    results = tmp_path / "results"
    run_path = new_run(results)
    ended = copy_host(run_path, "ended", 1)
    fifo = copy_host(run_path, "fifo", 2)
    for host_path in (ended, fifo):
        _break_cuda_init(host_path)
    path = os.path.join(ended, "membw.json")
    with open(path, encoding="utf-8") as handle:
        envelope = json.load(handle)
    envelope.update(status="error", reason="CUDA error: no CUDA-capable device is detected")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(envelope, handle)
    replace(fifo, "membw.json", os.mkfifo)
    unused_run, judgement = judged(results, run_path)
    assert probe_status(judgement.hosts["ended"], "membw").because == "health.cuda_init"   # the fold this test relies on
    check = probe_status(judgement.hosts["fifo"], "membw")
    assert check.status == "error" and check.value == UNREADABLE_VALUE and not check.because, check
    assert any(reason.startswith("membw.probe_status: the membw result cannot be judged: ") for reason in
               judgement.hosts["fifo"].reasons), judgement.hosts["fifo"].reasons
