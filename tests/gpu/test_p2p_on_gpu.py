"""p2p on a real machine with at least 2 NVIDIA GPUs (run on the device: python3 -m pytest -m gpu tests/gpu)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_p2p(tmp_path, params):
    params_file, out = tmp_path / "params.json", tmp_path / "p2p.json"
    params_file.write_text(json.dumps(params))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "p2p.py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=900)
    envelope = json.loads(out.read_text())
    pytest.importorskip("jsonschema")
    for name, document in (("envelope", envelope), ("p2p", envelope["data"])):
        schema_validator(name + ".schema.json").validate(document)
    return envelope


def test_every_ordered_pair_is_measured_and_verified(tmp_path):
    torch = pytest.importorskip("torch")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        pytest.skip("%d GPU(s) visible: p2p needs at least 2" % count)
    envelope = run_p2p(tmp_path, {})
    assert envelope["status"] == "ok", envelope["reason"]
    data = envelope["data"]
    pairs = {(pair["src"], pair["dst"]): pair for pair in data["pairs"]}
    assert sorted(pairs) == [(src, dst) for src in range(count) for dst in range(count) if src != dst]
    assert data["errors"] == [] and data["topology"].get("gpu_count", count) >= count
    for key, pair in pairs.items():
        assert pair["peer_access"] and pair["verified"] and "error" not in pair, (key, pair.get("error"))
        assert not isinstance(pair["link_class"], dict), (key, pair["link_class"])
        for phase in ("unidirectional", "bidirectional"):
            section = pair[phase]
            assert all(point["verified"] for point in section["sweep"]), (key, phase)
            assert section["headline_gbps"] > 5, (key, phase, section["headline_gbps"])
            assert section["spin_covered_enqueue"], (key, phase)
        assert pair["latency"]["verified"] and 0 < pair["latency"]["median_us"] < 1000, key
        if pair["link_kind"] == "nvlink":
            assert pair["unidirectional"]["headline_gbps"] > 100, (key, pair["link_class"])
            # NVLink is full duplex: two directions at once must move clearly more than one (else they were serialised)
            assert pair["bidirectional"]["headline_gbps"] > pair["unidirectional"]["headline_gbps"] * 1.2, key
    if count == 2:
        assert envelope["duration_s"] < 120
