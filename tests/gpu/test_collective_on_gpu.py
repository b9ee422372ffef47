"""The collective probe on a real multi-GPU machine (run on the device: python3 -m pytest -m gpu tests/gpu)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GIB = 1 << 30


def run_collective(tmp_path, params):
    params_file, out = tmp_path / "params.json", tmp_path / "collective.json"
    params_file.write_text(json.dumps(params))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "collective.py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=900)
    envelope = json.loads(out.read_text())
    pytest.importorskip("jsonschema")
    for name, document in (("envelope", envelope), ("collective", envelope["data"])):
        schema_validator(name + ".schema.json").validate(document)
    return envelope


def test_all_reduce_with_and_without_p2p_on_every_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 2:
        pytest.skip("needs at least 2 GPUs, this machine has %d" % count)
    envelope = run_collective(tmp_path, {})
    data = envelope["data"]
    assert envelope["status"] == "ok", (envelope["reason"], data.get("errors"))
    plan = data["plan"]
    assert (plan["backend"], plan["kind"], plan["world_size"]) == ("nccl", "cuda", count)
    assert plan["sizes_bytes"][0] == 8 and plan["sizes_bytes"][-1] == GIB
    assert len(data["devices"]) == count and isinstance(data["software"]["nccl_version"], str)
    assert [curve["name"] for curve in data["curves"]] == ["default", "p2p_disabled"]
    assert data["curves"][1]["env"] == {"NCCL_P2P_DISABLE": "1"}
    for curve in data["curves"]:
        assert "error" not in curve, curve.get("error")
        assert [point["size_bytes"] for point in curve["sweep"]] == plan["sizes_bytes"]
        assert all(point["verified"] for point in curve["sweep"]), curve["name"]
        assert curve["largest_bytes"] == GIB and curve["busbw_at_largest_gbps"] > 0
        assert isinstance(curve["knee"], dict) and curve["knee"]["knee_bytes"] > 0
    default, disabled = data["curves"]
    if "NCCL_DEBUG" not in os.environ:
        assert isinstance(default["transports"], list) and default["transports"], default["transports"]
        assert not any(name.startswith("P2P") for name in disabled["transports"]), disabled["transports"]
    classes = data["topology"].get("link_classes", []) if isinstance(data["topology"], dict) else []
    if any(link.startswith("NV") for link in classes):
        assert default["peak_busbw_gbps"] > 2 * disabled["peak_busbw_gbps"], (default["peak_busbw_gbps"], disabled["peak_busbw_gbps"])
    assert isinstance(data["explanation"], str) and "NCCL_P2P_DISABLE=1" in data["explanation"]
    assert envelope["duration_s"] < 300


def test_the_ring_is_predicted_before_it_is_measured(tmp_path):
    """On any GPU count: 2, 4, 8 predicted; those above the GPU count unavailable, never simulated; the rest compared."""
    torch = pytest.importorskip("torch")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count < 1:
        pytest.skip("needs a GPU")
    envelope = run_collective(tmp_path, {"p2p_disabled_sweep": False})
    prediction = envelope["data"]["prediction"]
    assert prediction["message_bytes"] == GIB
    assert [entry["traffic_ratio_to_2"] for entry in prediction["world_sizes"]] == [1.0, 1.5, 1.75]
    for entry in prediction["world_sizes"]:
        if entry["world_size"] > count:
            assert entry["measurable"] == {"unavailable": "needs %d GPUs, this host has %d" % (entry["world_size"], count)}
        else:
            assert entry["measurable"] is True
    if count == 1:
        assert envelope["status"] == "unavailable" and "ring_comparison" not in envelope["data"]
        return
    assert envelope["status"] == "ok", envelope["reason"]
    compared = {entry["world_size"]: entry for entry in envelope["data"]["ring_comparison"]}
    for size in (2, 4, 8):
        if size <= count:
            assert compared[size]["measured"]["busbw_gbps"] > 0, compared[size]
    assert [curve["world_size"] for curve in envelope["data"]["ring_curves"]] == [size for size in (2, 4) if size < count]
