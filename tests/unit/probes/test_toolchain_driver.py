"""driver_supports_cuda_build on hand-made readings."""
from probe_packages.toolchain.driver_contract import decide

TORCH_124 = {"torch_version": "2.5.1+cu124", "torch_cuda_version": "12.4", "problem": None}
TORCH_128 = {"torch_version": "2.7.0+cu128", "torch_cuda_version": "12.8", "problem": None}
TORCH_130 = {"torch_version": "2.11.0+cu130", "torch_cuda_version": "13.0", "problem": None}


def driver(nvml=None, libcuda=None, version="550.54.15", path="/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"):
    return {"driver_version": version, "nvml_cuda_code": nvml, "nvml_problem": None if nvml else "NVML: not read",
            "libcuda_code": libcuda, "libcuda_path": path if libcuda else None,
            "libcuda_problem": None if libcuda else "not loadable"}


def test_equal_versions_pass():
    contract = decide(TORCH_124, driver(nvml=12040, libcuda=12040))
    assert contract["status"] == "pass" and contract["remedy"] == ""
    assert contract["details"]["decided_by"] == "libcuda" and contract["details"]["nvml_cuda_version"] == "12.4"
    assert "torch 2.5.1+cu124 is built for CUDA 12.4; the driver 550.54.15 supports CUDA 12.4" in contract["observed"]
    assert any("12040 (CUDA 12.4)" in line for line in contract["evidence"])


def test_older_build_on_newer_driver_passes_by_nvml_alone():
    contract = decide(TORCH_124, driver(nvml=13000, version="580.65.06"))
    assert contract["status"] == "pass" and contract["details"]["decided_by"] == "nvml"


def test_newer_minor_fails_and_names_minor_version_compatibility():
    contract = decide(TORCH_128, driver(nvml=12040, libcuda=12040))
    assert contract["status"] == "fail"
    assert contract["details"]["minor_version_compatibility"] is True
    assert "minor version compatibility" in contract["observed"]
    assert contract["remedy"] == ("Install a driver that supports CUDA 12.8 or newer (nvidia-smi shows 'CUDA Version: 12.8' "
                                  "or higher), or a torch build for CUDA 12.4 or older.")


def test_newer_major_fails_with_the_branch():
    contract = decide(TORCH_130, driver(nvml=12090, libcuda=12090, version="575.51.03"))
    assert contract["status"] == "fail" and contract["details"]["minor_version_compatibility"] is False
    assert contract["remedy"] == ("Install a driver that supports CUDA 13.0 (the R580 branch or newer for CUDA 13.x), or a "
                                  "torch build for CUDA 12.9 or older.")


def test_forward_compat_libcuda_decides_and_is_named():
    # kernel driver 550 (CUDA 12.4 by NVML) with the cuda-compat libcuda of 13.0 on the loader path
    contract = decide(TORCH_130, driver(nvml=12040, libcuda=13000, path="/usr/local/cuda-13.0/compat/libcuda.so.1"))
    assert contract["status"] == "pass" and contract["details"]["forward_compat_libcuda"] is True
    assert "forward-compatibility libcuda (cuda-compat)" in contract["observed"]


def test_undecidable_cases_are_unavailable_never_pass():
    cpu = {"torch_version": "2.13.0+cpu", "torch_cuda_version": None,
           "problem": "torch built without CUDA (torch 2.13.0+cpu, torch.version.cuda is None)"}
    contract = decide(cpu, driver(nvml=13000))
    assert contract["status"] == "unavailable" and contract["observed"].startswith("not decided: torch built without CUDA")
    assert "CUDA build of torch" in contract["remedy"]
    contract = decide(TORCH_130, driver())
    assert contract["status"] == "unavailable" and "could not be read" in contract["observed"]
    contract = decide(dict(TORCH_130, torch_cuda_version="rocm"), driver(nvml=13000))
    assert contract["status"] == "unavailable" and "not a CUDA version" in contract["observed"]
