"""health: its section of the dossier."""
from __future__ import annotations

from ...report_health import health_view
from ..declaration import ProbeSection

SECTION = ProbeSection(health_view, "sections/health.html.j2", "sections/health.md.j2")
