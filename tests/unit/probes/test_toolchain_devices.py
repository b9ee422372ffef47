"""nvml_cuda_agree: CUDA_VISIBLE_DEVICES parsing and the comparison, on hand-made UUID sets."""
from probe_packages.toolchain.devices_contract import decide
from probe_packages.toolchain.visible_devices import expected_uuids

A = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
B = "GPU-1b2c3d4e-0000-1111-2222-333344445555"
C = "GPU-1b2c9999-aaaa-bbbb-cccc-ddddeeeeffff"
NVML = [A, B, C]


def test_visible_devices_unset_empty_indices_and_uuids():
    assert expected_uuids(None, NVML) == {"uuids": NVML, "notes": [], "undecidable": None}
    assert expected_uuids("", NVML)["uuids"] == [] and expected_uuids(" ", NVML)["uuids"] == []
    assert expected_uuids("2,0", NVML)["uuids"] == [C, A]           # order as listed
    assert expected_uuids(" 1 , 2 ", NVML)["uuids"] == [B, C]
    assert expected_uuids("GPU-8932f937", NVML)["uuids"] == [A]     # a unique prefix is enough
    assert expected_uuids(B.upper(), NVML)["uuids"] == [B]


def test_the_first_invalid_entry_hides_the_rest():
    plan = expected_uuids("0,2,-1,1", NVML)                         # the guide's own example
    assert plan["uuids"] == [A, C] and "'-1' is not a GPU index" in plan["notes"][0]
    assert expected_uuids("0,7,1", NVML)["uuids"] == [A]
    plan = expected_uuids("GPU-1b2c,0", NVML)                       # ambiguous prefix: B and C
    assert plan["uuids"] == [] and "matches 2 GPUs' UUIDs" in plan["notes"][0]
    assert expected_uuids("GPU-ffff,0", NVML)["uuids"] == []
    assert expected_uuids("1,,2", NVML)["uuids"] == [B]
    assert expected_uuids("all", NVML)["uuids"] == []
    plan = expected_uuids("1,1,2", NVML)
    assert plan["uuids"] == [B, C] and "counted once" in plan["notes"][0]
    assert "MIG instance" in expected_uuids("0,MIG-GPU-8932f937/1/2", NVML)["undecidable"]


def cuda(uuids, error=None, stage="done"):
    return {"problem": None, "error": error, "stage": stage, "device_count": len(uuids), "uuids": uuids}


def test_agreeing_sets_pass():
    contract = decide({"uuids": NVML, "problem": None}, None, cuda([A, B, C]))
    assert contract["status"] == "pass" and contract["remedy"] == ""
    assert contract["observed"] == "CUDA shows the 3 expected GPU(s) (CUDA_VISIBLE_DEVICES unset; NVML lists 3)"
    contract = decide({"uuids": NVML, "problem": None}, "2,GPU-8932", cuda([C, A]))
    assert contract["status"] == "pass" and contract["details"]["cuda_visible_devices"] == "2,GPU-8932"
    assert contract["details"]["expected_uuids"] == [C, A]
    assert decide({"uuids": [], "problem": None}, "", cuda([]))["status"] == "pass"  # nothing to hide


def test_mismatched_sets_name_what_is_missing_on_each_side():
    contract = decide({"uuids": NVML, "problem": None}, None, cuda([A, C]))
    assert contract["status"] == "fail" and contract["details"]["missing_in_cuda"] == [B]
    assert contract["observed"] == "CUDA shows 2 GPU(s), 3 expected; expected but not shown by CUDA: %s" % B
    stranger = "GPU-00000000-0000-0000-0000-000000000000"
    contract = decide({"uuids": NVML, "problem": None}, "0", cuda([A, B, stranger]))
    assert contract["status"] == "fail"
    assert contract["details"]["missing_in_nvml"] == [stranger] and contract["details"]["unexpected_in_cuda"] == [B]
    assert "unknown to NVML: %s" % stranger in contract["observed"]
    assert "CUDA_VISIBLE_DEVICES excludes it: %s" % B in contract["observed"]
    assert contract["remedy"].startswith("Name the GPUs in CUDA_VISIBLE_DEVICES by UUID")
    assert decide({"uuids": NVML, "problem": None}, None, cuda([A, C]))["remedy"].startswith("Run the health probe")


def test_cuda_failing_while_nvml_shows_gpus_fails():
    error = {"type": "RuntimeError", "message": "CUDA error: operation not supported"}
    contract = decide({"uuids": NVML, "problem": None}, None,
                      {"problem": None, "error": error, "stage": "properties", "device_count": 3, "uuids": None})
    assert contract["status"] == "fail" and contract["details"]["missing_in_cuda"] == NVML
    assert "CUDA failed: RuntimeError: CUDA error: operation not supported" in contract["observed"]
    assert "health probe" in contract["remedy"]


def test_counts_only_when_torch_has_no_uuids():
    no_uuid = {"problem": None, "error": None, "stage": "done", "device_count": 3, "uuids": [None, None, None]}
    assert decide({"uuids": NVML, "problem": None}, None, no_uuid)["status"] == "unavailable"
    no_uuid = dict(no_uuid, device_count=2, uuids=[None, None])
    assert decide({"uuids": NVML, "problem": None}, None, no_uuid)["status"] == "fail"


def test_undecidable_cases():
    contract = decide({"uuids": None, "problem": "NVML library not found"}, None, cuda([A]))
    assert contract["status"] == "unavailable" and "NVML library not found" in contract["observed"]
    hung = {"problem": "the fresh Python did not finish within 120.0 s; its process group was killed", "error": None,
            "stage": None, "device_count": None, "uuids": None}
    contract = decide({"uuids": NVML, "problem": None}, None, hung)
    assert contract["status"] == "unavailable" and "hangs or crashes" in contract["remedy"]
    contract = decide({"uuids": NVML, "problem": None}, "MIG-GPU-8932f937/1/2", cuda([A]))
    assert contract["status"] == "unavailable" and "MIG" in contract["observed"]
    contract = decide({"uuids": [A, None], "problem": None}, None, cuda([A, B]))
    assert contract["status"] == "unavailable" and "UUID" in contract["observed"]


def test_mig_mode_is_not_compared():
    contract = decide({"uuids": NVML, "problem": None, "mig_enabled": [1]}, None, cuda([A, B, C]))
    assert contract["status"] == "unavailable" and "MIG mode is enabled on GPU(s) 1" in contract["observed"]
