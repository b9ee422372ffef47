"""collective_hosts: its section of the dossier."""
from __future__ import annotations

from ...report_interconnect import collective_view
from ..declaration import ProbeSection

SECTION = ProbeSection(collective_view)
