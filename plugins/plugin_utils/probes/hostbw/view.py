"""hostbw: its section of the dossier."""
from __future__ import annotations

from ...report_measurements import hostbw_view
from ..declaration import ProbeSection

SECTION = ProbeSection(hostbw_view)
