"""The last-level cache of the measured device: the GPU's L2 from torch, the CPU's largest cache from sysfs."""
from __future__ import annotations

import glob
import os
from typing import Any, Dict, List, Optional, Tuple

from probelib.fields import unavailable

SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"


def parse_cache_size(text: str) -> int:
    """sysfs cache sizes: '32K', '1024K', '2M', '36864K', '512' (bytes)."""
    text = text.strip().upper()
    multipliers = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1] in multipliers:
        return int(text[:-1]) * multipliers[text[-1]]
    return int(text)


def largest_level(entries: List[Tuple[int, str, int]]) -> Optional[Tuple[int, int]]:
    """(level, bytes) of the highest data/unified cache level among (level, type, bytes) entries."""
    usable = [(level, size) for level, kind, size in entries if kind in ("Data", "Unified")]
    return max(usable) if usable else None


def cpu_last_level_cache(root: str = SYSFS_CACHE) -> Dict[str, Any]:
    entries = []
    for directory in sorted(glob.glob(os.path.join(root, "index*"))):
        try:
            values = {}
            for name in ("level", "type", "size"):
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    values[name] = handle.read().strip()
            entries.append((int(values["level"]), values["type"], parse_cache_size(values["size"])))
        except (OSError, ValueError):
            continue
    best = largest_level(entries)
    if best is None:
        return {"bytes": unavailable("no readable cache description under %s" % root), "source": root}
    return {"bytes": best[1], "source": "L%d cache of cpu0 from %s" % (best[0], root)}


def gpu_l2_cache(torch: Any, index: int) -> Dict[str, Any]:
    size = getattr(torch.cuda.get_device_properties(index), "L2_cache_size", None)
    if not isinstance(size, int) or size <= 0:
        return {"bytes": unavailable("this torch does not report the GPU's L2 size"), "source": "torch"}
    return {"bytes": size, "source": "L2 from torch.cuda.get_device_properties"}


def last_level_cache(torch: Any, device: Dict[str, Any]) -> Dict[str, Any]:
    if device["kind"] == "cuda":
        return gpu_l2_cache(torch, device["index"])
    return cpu_last_level_cache()
