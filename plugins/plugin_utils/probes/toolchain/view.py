"""toolchain: its section of the dossier."""
from __future__ import annotations

from ...report_toolchain import toolchain_view
from ..declaration import ProbeSection

SECTION = ProbeSection(toolchain_view)
