"""collective: its section of the dossier, the all-reduce view it shares with collective_hosts."""
from __future__ import annotations

from ...probe_kit.kit import ProbeSection, collective_view

SECTION = ProbeSection(collective_view)
