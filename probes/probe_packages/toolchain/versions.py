"""Version arithmetic: torch's CUDA build string, NVML's and libcuda's integer CUDA versions, NCCL's version code.

Sources for the driver branches (Linux): CUDA Toolkit Release Notes, table "CUDA Toolkit and Minimum Required Driver
Version for CUDA Minor Version Compatibility" (11.x: >= 450.80.02, 12.x: >= 525.60.13), and NVIDIA's data center
"Supported Drivers and CUDA Toolkit Versions" matrix (R580: CUDA 13.0+; R535 and R570: CUDA 12.x through minor
version compatibility).
"""
from __future__ import annotations

import re
from typing import Any, Optional, Tuple

# The oldest driver branch that runs a CUDA major version at all (through minor version compatibility).
MINIMUM_BRANCH_FOR_MAJOR = {11: "R450", 12: "R525", 13: "R580"}

_CUDA_TEXT = re.compile(r"^\s*(\d+)(?:\.(\d+))?")


def parse_cuda_version(text: Any) -> Optional[Tuple[int, int]]:
    """torch.version.cuda '12.4' -> (12, 4), '13.0' -> (13, 0), '12' -> (12, 0); anything else -> None."""
    if not isinstance(text, str):
        return None
    match = _CUDA_TEXT.match(text)
    if not match:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def cuda_version_from_code(code: Any) -> Optional[Tuple[int, int]]:
    """NVML / cuDriverGetVersion integer: 12040 -> (12, 4), 13000 -> (13, 0), 12090 -> (12, 9); not positive -> None."""
    if isinstance(code, bool) or not isinstance(code, int) or code <= 0:
        return None
    return code // 1000, (code % 1000) // 10


def format_cuda(version: Tuple[int, int]) -> str:
    return "%d.%d" % version


def decode_nccl_code(code: Any) -> Optional[Tuple[int, int, int]]:
    """ncclGetVersion's code: major * 10000 + minor * 100 + patch since NCCL 2.9 (22703 -> 2.27.3), major * 1000 +
    minor * 100 + patch before (2708 -> 2.7.8), as NCCL_VERSION_CODE in nccl.h."""
    if isinstance(code, bool) or not isinstance(code, int) or code <= 0:
        return None
    if code >= 10000:
        return code // 10000, (code % 10000) // 100, code % 100
    return code // 1000, (code % 1000) // 100, code % 100


def nccl_from_torch(value: Any) -> Tuple[Optional[Tuple[int, int, int]], str]:
    """torch.cuda.nccl.version(): (2, 27, 3) or (2, 27, 3, 'suffix') in current torch, the integer code in old ones."""
    if isinstance(value, (list, tuple)) and len(value) >= 3 and all(isinstance(part, int) for part in value[:3]):
        suffix = "".join(str(part) for part in value[3:])
        return (int(value[0]), int(value[1]), int(value[2])), suffix
    if isinstance(value, int):
        return decode_nccl_code(value), ""
    return None, ""


def format_nccl(version: Tuple[int, int, int], suffix: str = "") -> str:
    return "%d.%d.%d%s" % (version + (suffix,))


def driver_hint(needed: Tuple[int, int], have_major: Optional[int]) -> str:
    """What driver to install for CUDA ``needed``: the branch for a new major version, else the CUDA version itself."""
    branch = MINIMUM_BRANCH_FOR_MAJOR.get(needed[0])
    if have_major is not None and have_major == needed[0]:
        return "a driver that supports CUDA %s or newer (nvidia-smi shows 'CUDA Version: %s' or higher)" % (
            format_cuda(needed), format_cuda(needed))
    if branch:
        return "a driver that supports CUDA %s (the %s branch or newer for CUDA %d.x)" % (format_cuda(needed), branch, needed[0])
    return "a driver that supports CUDA %s" % format_cuda(needed)
