"""fusion: its section of the dossier."""
from __future__ import annotations

from ...report_fusion import fusion_view
from ..declaration import ProbeSection

SECTION = ProbeSection(fusion_view)
