"""precision: its section of the dossier."""
from __future__ import annotations

from ...report_precision import precision_view
from ..declaration import ProbeSection

SECTION = ProbeSection(precision_view)
