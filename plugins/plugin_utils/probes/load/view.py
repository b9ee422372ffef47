"""load: its section of the dossier."""
from __future__ import annotations

from ...report_load import load_view
from ..declaration import ProbeSection

SECTION = ProbeSection(load_view)
