"""Which pairs are measured and which NVML GPU each torch GPU is: ordered pairs, the UUID match, the topology lookup."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from probelib.fields import is_unavailable, unavailable


def ordered_pairs(count: int) -> List[Tuple[int, int]]:
    """Every ordered pair (src, dst) of ``count`` GPUs, src != dst: count x (count - 1), src-major."""
    return [(src, dst) for src in range(count) for dst in range(count) if src != dst]


def pair_name(src: int, dst: int) -> str:
    return "%d->%d" % (src, dst)


def nvml_indices(torch_uuids: Sequence[Any], nvml_uuids: Any) -> List[Any]:
    """The NVML index of each torch GPU, matched by UUID (the two orders need not agree), or why it is unknown."""
    if is_unavailable(nvml_uuids):
        return [unavailable("NVML could not list the GPUs' UUIDs: %s" % nvml_uuids["unavailable"]) for unused_uuid in torch_uuids]
    by_uuid: Dict[str, int] = {}
    for index, uuid in enumerate(nvml_uuids):
        if isinstance(uuid, str):
            by_uuid.setdefault(uuid, index)
    found: List[Any] = []
    for uuid in torch_uuids:
        if not isinstance(uuid, str):
            found.append(unavailable("torch gives no UUID for this GPU, so it cannot be matched to NVML's"))
        elif uuid in by_uuid:
            found.append(by_uuid[uuid])
        else:
            found.append(unavailable("no NVML GPU has the UUID %s that torch reports" % uuid))
    return found


def topology_pair(topology: Any, nvml_src: Any, nvml_dst: Any) -> Tuple[Any, bool]:
    """(the topology's unordered pair entry for two NVML indices, whether src is its gpu_a), or (unavailable, True)."""
    if is_unavailable(topology):
        return unavailable("topology unavailable: %s" % topology["unavailable"]), True
    for value in (nvml_src, nvml_dst):
        if is_unavailable(value):
            return value, True
    if nvml_src == nvml_dst:
        return unavailable("the source and destination GPUs match the same NVML GPU %d" % nvml_src), True
    low, high = min(nvml_src, nvml_dst), max(nvml_src, nvml_dst)
    for entry in topology.get("pairs", []):
        if entry.get("gpu_a") == low and entry.get("gpu_b") == high:
            return entry, nvml_src == low
    return unavailable("the topology (%s) has no entry for NVML GPUs %d and %d" % (topology.get("method", "?"), low, high)), True
