"""membw: its section of the dossier."""
from __future__ import annotations

from ...report_measurements import membw_view
from ..declaration import ProbeSection

SECTION = ProbeSection(membw_view)
