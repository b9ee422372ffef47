"""Version arithmetic of the toolchain probe, against hand-decoded values."""
from probe_packages.toolchain.versions import (cuda_version_from_code, decode_nccl_code, driver_hint, format_cuda, format_nccl,
                                               nccl_from_torch, parse_cuda_version)


def test_torch_cuda_strings():
    assert parse_cuda_version("12.4") == (12, 4)
    assert parse_cuda_version("13.0") == (13, 0)
    assert parse_cuda_version("12") == (12, 0)
    assert parse_cuda_version("11.8.89") == (11, 8)
    for bad in (None, "", "cpu", 12.4, "v12"):
        assert parse_cuda_version(bad) is None


def test_driver_codes():
    # NVML / cuDriverGetVersion: 1000 * major + 10 * minor
    assert cuda_version_from_code(12040) == (12, 4)
    assert cuda_version_from_code(13000) == (13, 0)
    assert cuda_version_from_code(12090) == (12, 9)
    assert cuda_version_from_code(11080) == (11, 8)
    for bad in (0, -1, None, "12040", True):
        assert cuda_version_from_code(bad) is None
    assert format_cuda((13, 0)) == "13.0"
    # the string and the code compare as tuples: 12.4 <= 12.4 < 12.8 < 13.0
    assert parse_cuda_version("12.4") <= cuda_version_from_code(12040) < parse_cuda_version("12.8") < (13, 0)


def test_nccl_codes():
    assert decode_nccl_code(22703) == (2, 27, 3)   # 2*10000 + 27*100 + 3, NCCL >= 2.9
    assert decode_nccl_code(21903) == (2, 19, 3)
    assert decode_nccl_code(2708) == (2, 7, 8)     # 2*1000 + 7*100 + 8, NCCL < 2.9
    assert decode_nccl_code(0) is None and decode_nccl_code(None) is None
    assert nccl_from_torch((2, 27, 3)) == ((2, 27, 3), "")
    assert nccl_from_torch([2, 21, 5, "+cuda12.4"]) == ((2, 21, 5), "+cuda12.4")
    assert nccl_from_torch(2708) == ((2, 7, 8), "")
    assert nccl_from_torch("2.27.3") == (None, "")
    assert format_nccl((2, 27, 3)) == "2.27.3" and format_nccl((2, 21, 5), "+cuda12.4") == "2.21.5+cuda12.4"


def test_driver_hints():
    assert driver_hint((13, 0), 12) == "a driver that supports CUDA 13.0 (the R580 branch or newer for CUDA 13.x)"
    assert driver_hint((12, 8), 12) == ("a driver that supports CUDA 12.8 or newer (nvidia-smi shows 'CUDA Version: 12.8' "
                                        "or higher)")
    assert driver_hint((14, 0), 13) == "a driver that supports CUDA 14.0"
