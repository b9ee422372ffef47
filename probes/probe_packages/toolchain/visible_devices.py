"""Which of NVML's GPUs CUDA should show, given CUDA_VISIBLE_DEVICES (CUDA Programming Guide, "CUDA Environment
Variables", CUDA_VISIBLE_DEVICES).

Unset: every GPU. Empty: none. Otherwise a comma-separated list of integer indices (nvidia-smi's order, NVML's) or
GPU UUIDs, where a unique prefix such as GPU-8932f937 is enough; the first invalid entry hides it and every entry after
it. MIG-... entries name MIG instances, which this probe does not compare.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence

_INTEGER = re.compile(r"^[+-]?\d+$")


def expected_uuids(value: Optional[str], nvml_uuids: Sequence[Any]) -> Dict[str, Any]:
    """{uuids: the GPUs CUDA should show, in CUDA's order; notes: what was skipped and why; undecidable: a reason or
    None}. ``nvml_uuids`` is NVML's UUID per index (None where it could not be read)."""
    notes: List[str] = []
    if value is None:
        return {"uuids": list(nvml_uuids), "notes": notes, "undecidable": None}
    uuids: List[Any] = []
    if not value.strip():
        notes.append("CUDA_VISIBLE_DEVICES is empty: no GPU is visible")
        return {"uuids": uuids, "notes": notes, "undecidable": None}
    for position, raw in enumerate(value.split(",")):
        token = raw.strip()
        if token.upper().startswith("MIG-"):
            return {"uuids": uuids, "notes": notes,
                    "undecidable": "CUDA_VISIBLE_DEVICES names a MIG instance (entry %d); MIG devices are not compared" % position}
        chosen, problem = _resolve(token, nvml_uuids)
        if problem:
            notes.append("entry %d %r %s: it and every entry after it are hidden" % (position, token, problem))
            break
        if chosen in uuids:
            notes.append("entry %d %r repeats a GPU already listed; counted once" % (position, token))
            continue
        uuids.append(chosen)
    return {"uuids": uuids, "notes": notes, "undecidable": None}


def _resolve(token: str, nvml_uuids: Sequence[Any]):
    if _INTEGER.match(token):
        index = int(token)
        if 0 <= index < len(nvml_uuids):
            return nvml_uuids[index], None
        return None, "is not a GPU index (NVML has %d GPU(s))" % len(nvml_uuids)
    if token.lower().startswith("gpu-"):
        matches = [uuid for uuid in nvml_uuids if isinstance(uuid, str) and uuid.lower().startswith(token.lower())]
        if len(matches) == 1:
            return matches[0], None
        if not matches:
            return None, "matches no GPU's UUID"
        return None, "matches %d GPUs' UUIDs (not unique)" % len(matches)
    return None, "is neither a GPU index nor a GPU UUID"
