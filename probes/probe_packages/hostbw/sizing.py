"""How large a buffer fits: the request, bounded by free host memory (MemAvailable) and free GPU memory."""
from __future__ import annotations

from typing import Any, Dict, Optional

MIB = 2 ** 20
HOST_FRACTION = 0.5
DEVICE_FRACTION = 0.8


def choose_buffer(requested_mib: int, host_available_bytes: Optional[int], host_buffers: int,
                  device_free_bytes: Optional[int] = None, device_buffers: int = 0) -> Dict[str, Any]:
    """The buffer size in whole MiB: at most the request, at most half of MemAvailable shared by the host
    buffers that live at once, at most 80 % of the GPU's free memory shared by its buffers.

    Returns {requested_mib, used_mib, bytes, limited_by} where limited_by is "request", "host_memory" or
    "device_memory". Raises ValueError when not even 1 MiB fits.
    """
    used = requested_mib
    limited_by = "request"
    if host_available_bytes is not None and host_buffers > 0:
        host_cap = int(host_available_bytes * HOST_FRACTION) // host_buffers // MIB
        if host_cap < used:
            used, limited_by = host_cap, "host_memory"
    if device_free_bytes is not None and device_buffers > 0:
        device_cap = int(device_free_bytes * DEVICE_FRACTION) // device_buffers // MIB
        if device_cap < used:
            used, limited_by = device_cap, "device_memory"
    if used < 1:
        raise ValueError("not even 1 MiB fits: host MemAvailable %s bytes for %d buffers, GPU free %s bytes for %d buffers"
                         % (host_available_bytes, host_buffers, device_free_bytes, device_buffers))
    return {"requested_mib": requested_mib, "used_mib": used, "bytes": used * MIB, "limited_by": limited_by}
