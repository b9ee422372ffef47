"""p2p: its section of the dossier."""
from __future__ import annotations

from ...report_interconnect import p2p_view
from ..declaration import ProbeSection

SECTION = ProbeSection(p2p_view)
