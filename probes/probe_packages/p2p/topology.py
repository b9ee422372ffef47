"""The GPUs' topology through the shared topology code that health records too (probelib.nvml.topology: NVML, else
nvidia-smi topo -m), and NVML's UUID per index."""
from __future__ import annotations

from typing import Any, Callable, Dict

from probelib.fields import is_unavailable, unavailable
from probelib.nvml.access import NvmlSession
from probelib.nvml.context import ReadContext
from probelib.nvml.topology import collect_topology


def summarize(topology: Any) -> Any:
    """The data's topology member: where the topology came from and how many GPUs it covers."""
    if is_unavailable(topology):
        return topology
    summary = {"source": topology.get("method", "unknown"), "gpu_count": int(topology.get("gpu_count", 0))}
    if topology.get("fallback_error"):
        summary["note"] = "the nvidia-smi topo -m fallback failed: %s" % topology["fallback_error"]
    return summary


def open_session() -> NvmlSession:
    return NvmlSession().open()


def read_topology(opener: Callable[[], NvmlSession] = open_session) -> Dict[str, Any]:
    """{topology (collect_topology's result or unavailable), nvml_uuids (one per NVML index, or unavailable)}."""
    session = opener()
    try:
        if session.usable:
            nvml_uuids: Any = [session.reader.value("nvmlDeviceGetUUID", handle) if handle is not None else None
                               for handle in session.handles]
            nvml_uuids = [uuid if isinstance(uuid, str) else None for uuid in nvml_uuids]
        else:
            nvml_uuids = unavailable(session.reason or "NVML is not usable")
        try:
            topology = collect_topology(ReadContext(params={}, nvml=session))
        except Exception as exc:  # the measurement runs without link classes
            topology = unavailable("reading the topology failed: %s: %s" % (type(exc).__name__, exc))
    finally:
        session.close()
    return {"topology": topology, "nvml_uuids": nvml_uuids}
