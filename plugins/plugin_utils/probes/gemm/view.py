"""gemm: its section of the dossier."""
from __future__ import annotations

from ...report_measurements import gemm_view
from ..declaration import ProbeSection

SECTION = ProbeSection(gemm_view)
