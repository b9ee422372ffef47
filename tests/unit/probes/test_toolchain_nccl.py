"""nccl_loads on hand-made answers of the fresh Python."""
from probe_packages.toolchain.nccl_contract import decide

TORCH = {"torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0", "problem": None}
PATH = "/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"


def library(code=22703, in_use=True, loaded=True, rc=0, error=None):
    return {"path": PATH, "in_use": in_use, "loaded": loaded, "rc": rc, "code": code, "error": error,
            "candidates": [PATH], "mapped": [PATH] if in_use else []}


def test_loaded_library_agreeing_with_torch_passes():
    contract = decide(TORCH, {"version": [2, 27, 3]}, library())
    assert contract["status"] == "pass" and contract["remedy"] == ""
    assert contract["details"] == {"torch_nccl_version": "2.27.3", "library_path": PATH, "library_in_use": True,
                                   "library_nccl_version": "2.27.3"}
    assert any("ncclGetVersion = 22703 (2.27.3)" in line for line in contract["evidence"])


def test_mapped_library_with_another_version_fails():
    contract = decide(TORCH, {"version": [2, 27, 3]}, library(code=22105))
    assert contract["status"] == "fail" and "reports 2.21.5" in contract["observed"] and contract["remedy"]


def test_unmapped_file_with_another_version_is_recorded_not_failed():
    contract = decide(TORCH, {"version": [2, 27, 3]}, library(code=22105, in_use=False))
    assert contract["status"] == "pass" and "torch does not use it" in contract["observed"]


def test_no_file_means_static_nccl_and_torch_decides():
    contract = decide(TORCH, {"version": 2708}, None)
    assert contract["status"] == "pass" and "linked into torch" in contract["observed"]
    assert contract["details"]["torch_nccl_version"] == "2.7.8"


def test_failures():
    contract = decide(TORCH, {"error": {"type": "RuntimeError", "message": "NCCL Error 1"}}, library())
    assert contract["status"] == "fail" and "RuntimeError: NCCL Error 1" in contract["observed"]
    contract = decide(TORCH, {"version": [2, 27, 3]}, library(loaded=False, error={"type": "OSError", "message": "bad ELF"}))
    assert contract["status"] == "fail" and "does not load: OSError: bad ELF" in contract["observed"]
    no_symbol = library(rc=None, code=None, error={"type": "AttributeError", "message": "no symbol"})
    contract = decide(TORCH, {"version": [2, 27, 3]}, no_symbol)
    assert contract["status"] == "fail" and "does not report its version" in contract["observed"]


def test_cpu_torch_is_unavailable():
    cpu = {"torch_version": "2.13.0+cpu", "torch_cuda_version": None,
           "problem": "torch built without CUDA (torch 2.13.0+cpu, torch.version.cuda is None)"}
    contract = decide(cpu, None, None)
    assert contract["status"] == "unavailable" and "torch built without CUDA" in contract["observed"]
    missing = {"torch_version": None, "torch_cuda_version": None, "problem": "torch is not importable by /usr/bin/python3"}
    assert "importable" in decide(missing, None, None)["remedy"]
