"""tuning: its section of the dossier."""
from __future__ import annotations

from ...report_tuning import acs_text, tuning_view
from ..declaration import ProbeSection

SECTION = ProbeSection(tuning_view)
