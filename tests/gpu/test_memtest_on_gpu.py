"""memtest on a real NVIDIA machine (run on the device: python3 -m pytest -m gpu tests/gpu/test_memtest_on_gpu.py): most
of every GPU's free memory tested, one worker per GPU and two workers on each GPU, every pattern, the counters read,
and an injected bit flip found at its byte on the GPU path."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1 << 20


def run_memtest(tmp_path, params):
    params_file, out = tmp_path / "params.json", tmp_path / "memtest.json"
    params_file.write_text(json.dumps(params))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "memtest.py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=900)
    envelope = json.loads(out.read_text())
    pytest.importorskip("jsonschema")
    schema_validator("memtest.schema.json").validate(envelope["data"])
    return envelope


def test_one_worker_per_gpu_tests_most_of_the_free_memory_with_every_pattern(tmp_path):
    torch = pytest.importorskip("torch")
    envelope = run_memtest(tmp_path, {"budget_s": 10})
    assert envelope["status"] == "ok", envelope["reason"]
    data = envelope["data"]
    assert len(data["devices"]) == torch.cuda.device_count() > 0
    assert data["together"]["mode"] == ("in_process" if torch.cuda.device_count() == 1 else "processes")
    for entry in data["devices"]:
        assert entry["device"]["kind"] == "cuda" and entry["errors"] == 0
        assert entry["tested_pct_of_free"] > 80, entry  # 90 % of (free - 2 GiB)
        assert entry["counter_changes"]["rose"] == [], entry["counter_changes"]
        assert entry["counter_changes"]["compared"], entry["counter_changes"]["unread"]
    for record in data["together"]["workers"]:
        assert record["status"] == "ok", record.get("error")
        result = record["result"]
        assert all(pattern["passes"] >= 1 for pattern in result["patterns"])
        assert result["test_s"] <= 10 + max(pattern["seconds"] / pattern["passes"] for pattern in result["patterns"])
        assert result["gbps"] > 100, result["gbps"]


def test_two_workers_on_each_gpu_share_it_and_the_injected_flip_is_found(tmp_path):
    offset = 1000 * MIB + 5
    envelope = run_memtest(tmp_path, {"budget_s": 5, "workers_per_gpu": 2, "inject_offset_bytes": offset, "inject_bit": 4,
                                      "inject_worker": 1, "inject_pattern": "walking_zeros"})
    assert envelope["status"] == "ok", envelope["reason"]
    together = envelope["data"]["together"]
    assert together["mode"] == "processes" and together["released_together"], together
    for record in together["workers"]:
        assert record["status"] == "ok", record.get("error")
        assert record["workers_on_device"] == 2 and record["result"]["tested_pct_of_share"] > 75, record["result"]
        expected = 1 if record["worker"] == 1 else 0
        assert record["result"]["errors"] == expected, record["result"]["error_ranges"]
    flipped = together["workers"][1]["result"]
    (found,) = flipped["error_ranges"]
    assert (found["pattern"], found["pass"]) == ("walking_zeros", 0)
    assert found["error_bytes"] == [1000 * MIB, 1000 * MIB + 8] and found["chunk_bytes"] == [1024 * MIB - 256 * MIB, 1024 * MIB]
    assert found["first_differing_bits"] == "0x%016x" % (1 << (5 * 8 + 4))
    for entry in envelope["data"]["devices"]:
        assert entry["tested_pct_of_free"] > 75 and entry["workers"] == [2 * entry["device"]["index"], 2 * entry["device"]["index"] + 1]
