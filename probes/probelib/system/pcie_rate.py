"""A PCIe link's raw rate per direction from its generation and width: the ceiling a copy over the link is compared
with (hostbw's copies, collective's ring prediction)."""
from __future__ import annotations

from typing import Any

from probelib.fields import is_unavailable, unavailable

# Gigatransfers per second per lane and the line-code efficiency, per PCIe generation.
_GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
_ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130, 6: 242 / 256}


def link_raw_gbps(generation: Any, width: Any) -> Any:
    """GB/s per direction after line coding, before packet (TLP/DLLP) overhead: gen 5 x16 -> 63.015.

    Copies reach about 85-90 % of it (nvbandwidth on H200: 55.4 GB/s of 63).
    """
    if is_unavailable(generation) or is_unavailable(width):
        return unavailable("the PCIe link generation or width is unknown")
    if generation not in _GT_PER_S:
        return unavailable("PCIe generation %r is not in the table (1-6)" % (generation,))
    if not isinstance(width, int) or width < 1:
        return unavailable("PCIe link width %r is not a lane count" % (width,))
    return round(_GT_PER_S[generation] * width * _ENCODING[generation] / 8.0, 3)
