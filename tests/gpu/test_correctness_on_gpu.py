"""gemm's per-case verification on a real NVIDIA GPU (run on the device: python3 -m pytest -m gpu tests/gpu): cuBLAS
gives the same bits before and after the timed repeats, and an injected sign flip is caught with the case and its
magnitude. The load's checks on the GPU: tests/gpu/test_load_on_gpu.py."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.schemas import schema_validator

pytestmark = pytest.mark.gpu

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INJECTION = {"case": "square-8192", "dtype": "bf16", "element": 8193, "bit": 15}


def test_gemm_verifies_every_case_and_catches_an_injected_sign_flip(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible")
    params_file, out = tmp_path / "params.json", tmp_path / "gemm.json"
    params_file.write_text(json.dumps({"quick": True, "repeats": 1, "power_state_dtypes": [], "inject_bit_flip": INJECTION}))
    subprocess.run([sys.executable, os.path.join(ROOT, "probes", "gemm.py"), "--params", str(params_file), "--out", str(out)],
                   check=True, timeout=600)
    envelope = json.loads(out.read_text())
    assert envelope["status"] == "ok", envelope["reason"]
    schema_validator("gemm.schema.json").validate(envelope["data"])
    for entry in envelope["data"]["devices"]:
        for result in entry["results"]:
            verification = result["verification"]
            assert verification["mode"] == "bitwise" and verification["deterministic"] is True, (result["name"], verification)
            hit = entry["device"]["index"] == 0 and result["name"] == INJECTION["case"]
            if not hit:
                assert verification["equal"] is True, (entry["device"]["index"], result["name"], verification)
                continue
            assert verification["injected"] == INJECTION and verification["differing_elements"] == 1
            assert verification["first_index"] == [1, 1] and verification["first_got"] == -verification["first_expected"]
            assert verification["max_abs_diff"] == pytest.approx(2 * abs(verification["first_expected"]), rel=1e-2)
