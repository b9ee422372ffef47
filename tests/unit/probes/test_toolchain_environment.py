"""no_distorting_environment on hand-made environments: names only, never values."""
import json

from probe_packages.toolchain.environment import VARIABLES, decide, find_set

DCGM_LIST = ("NSIGHT_CUDA_DEBUGGER", "CUDA_INJECTION32_PATH", "CUDA_INJECTION64_PATH", "CUDA_AUTO_BOOST",
             "CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "CUDA_COREDUMP_FILE", "CUDA_DEVICE_WAITS_ON_EXCEPTION", "CUDA_PROFILE",
             "COMPUTE_PROFILE", "OPENCL_PROFILE")


def test_dcgm_list_and_the_required_others_are_checked():
    names = {variable.name for variable in VARIABLES}
    assert set(DCGM_LIST) <= names
    assert {"CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_COREDUMP_*", "CUDA_MPS_PIPE_DIRECTORY",
            "LD_PRELOAD", "PYTORCH_NO_CUDA_MEMORY_CACHING", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE",
            "NCCL_IB_DISABLE"} <= names
    assert "CUDA_VISIBLE_DEVICES" not in names and "NCCL_NVLS_ENABLE" not in names
    assert all(variable.why and variable.source for variable in VARIABLES)


def test_clean_environment_passes():
    contract = decide({"PATH": "/usr/bin", "HOME": "/root", "CUDA_VISIBLE_DEVICES": "0", "NCCL_NVLS_ENABLE": "0"})
    assert contract["status"] == "pass" and contract["observed"] == "none set" and contract["remedy"] == ""
    assert contract["details"]["set"] == [] and len(contract["details"]["checked"]) == len(VARIABLES)


def test_set_variables_fail_by_name_and_values_never_appear():
    environ = {"PATH": "/usr/bin", "CUDA_INJECTION64_PATH": "/opt/secret-tool-XYZ.so", "CUDA_LAUNCH_BLOCKING": "1",
               "CUDA_COREDUMP_SHOW_PROGRESS": "secret-value-ABC", "LD_PRELOAD": "/lib/secret-preload.so",
               "NCCL_P2P_DISABLE": "1"}
    contract = decide(environ)
    assert contract["status"] == "fail"
    assert contract["details"]["set"] == ["CUDA_COREDUMP_SHOW_PROGRESS", "CUDA_INJECTION64_PATH", "CUDA_LAUNCH_BLOCKING",
                                          "LD_PRELOAD", "NCCL_P2P_DISABLE"]
    assert contract["remedy"].startswith("Unset CUDA_COREDUMP_SHOW_PROGRESS, CUDA_INJECTION64_PATH, CUDA_LAUNCH_BLOCKING,")
    assert "CUDA_LAUNCH_BLOCKING (makes every kernel launch synchronous" in contract["observed"]
    text = json.dumps(contract)
    for value in ("secret-tool-XYZ", "secret-value-ABC", "secret-preload"):
        assert value not in text


def test_values_that_switch_the_feature_off_are_inert():
    environ = {"CUDA_LAUNCH_BLOCKING": "0", "NCCL_P2P_DISABLE": "0", "NCCL_IB_DISABLE": " 0 ", "LD_PRELOAD": "",
               "CUDA_INJECTION64_PATH": "", "CUDA_DEVICE_MAX_CONNECTIONS": "32", "CUDA_DEVICE_MAX_COPY_CONNECTIONS": "8"}
    assert find_set(environ) == {"set": [], "set_inert": sorted(environ)}
    contract = decide(environ)
    assert contract["status"] == "pass" and "not counted" in contract["evidence"][1]
    # fewer connections than the default 8, a non-number, and presence-only variables count
    environ = {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "CUDA_DEVICE_MAX_COPY_CONNECTIONS": "many",
               "PYTORCH_NO_CUDA_MEMORY_CACHING": "0", "CUDA_AUTO_BOOST": "0", "NVIDIA_TF32_OVERRIDE": "0"}
    assert find_set(environ) == {"set": sorted(environ), "set_inert": []}
