"""Runs the memtest probe for real on this machine (the CPU path, host memory): one worker in the probe's process, and two
worker processes released together by the together runner, one of them given an injected bit flip that must come back
as an error at its byte; the data against the schema."""
import subprocess
import sys

import pytest

from probe_runs import assert_foreign_processes_recorded, assert_schema_header, probe_path, run_probe, validate_envelope

pytest.importorskip("torch")

MIB = 1 << 20
FAST = {"cpu_budget_s": 0.5, "cpu_mib": 16, "cpu_chunk_mib": 1}


def test_schema_header():
    assert_schema_header("memtest")


def test_help_works_without_running():
    completed = subprocess.run([sys.executable, probe_path("memtest"), "--help"], stdout=subprocess.PIPE, timeout=60, check=True)
    assert b"walking_ones" in completed.stdout and b"inject_offset_bytes" in completed.stdout


def test_one_worker_tests_host_memory_in_the_probes_process(tmp_path):
    envelope = run_probe(tmp_path, "memtest", FAST, timeout=120, python=sys.executable)
    validate_envelope(envelope, "memtest")
    assert envelope["status"] == "ok", envelope["reason"]
    data = envelope["data"]
    assert_foreign_processes_recorded(data)
    assert data["plan"]["kind"] == "cpu" and data["plan"]["budget_s"] == 0.5 and data["plan"]["inject"] is None
    together = data["together"]
    assert together["mode"] == "in_process" and together["released_together"] is True
    (record,) = together["workers"]
    assert (record["worker"], record["kind"], record["slot"], record["workers_on_device"], record["status"]) == (0, "cpu", 0, 1, "ok")
    result = record["result"]
    assert result["buffer_bytes"] == 16 * MIB and result["errors"] == 0 and result["chunks"] == 16
    assert all(entry["passes"] >= 1 for entry in result["patterns"])
    (device,) = data["devices"]
    assert device["device"]["kind"] == "cpu" and device["tested_bytes"] == 16 * MIB and device["errors"] == 0
    assert device["counter_changes"]["compared"] == [] and device["workers"] == [0]
    assert data["errors"] == []


def test_two_worker_processes_run_at_once_and_the_injected_flip_is_found_at_its_byte(tmp_path):
    offset = 5 * MIB + 3
    params = dict(FAST, workers_per_gpu=2, inject_offset_bytes=offset, inject_bit=2, inject_worker=1, inject_pattern="random")
    envelope = run_probe(tmp_path, "memtest", params, timeout=180, python=sys.executable)
    validate_envelope(envelope, "memtest")
    assert envelope["status"] == "ok", envelope["reason"]
    together = envelope["data"]["together"]
    assert together["mode"] == "processes" and together["task"] == "probe_packages.memtest.worker:run_worker"
    assert together["released_together"] is True
    first, second = together["workers"]
    assert [(record["worker"], record["slot"], record["workers_on_device"]) for record in (first, second)] == [(0, 0, 2), (1, 1, 2)]
    assert first["status"] == second["status"] == "ok"
    assert first["result"]["buffer_bytes"] == second["result"]["buffer_bytes"] == 8 * MIB
    assert first["result"]["errors"] == 0 and first["result"]["injected"] is None
    assert second["result"]["errors"] == 1
    (found,) = second["result"]["error_ranges"]
    assert (found["pattern"], found["pass"], found["errors"]) == ("random", 0, 1)
    assert found["error_bytes"] == [5 * MIB, 5 * MIB + 8] and found["chunk_bytes"] == [5 * MIB, 6 * MIB]
    assert found["first_differing_bits"] == "0x%016x" % (1 << (3 * 8 + 2))
    (device,) = envelope["data"]["devices"]
    assert device["errors"] == 1 and device["tested_bytes"] == 16 * MIB and device["workers"] == [0, 1]
