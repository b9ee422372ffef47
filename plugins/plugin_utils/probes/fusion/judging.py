"""fusion: what the judge is told about it (its together phase only: how much the compiler's fusion saves is explained,
not judged)."""
from __future__ import annotations

from ...probe_kit.kit import ProbeJudging
from .together_checks import TOGETHER_CHECKS

JUDGING = ProbeJudging(checks=dict(TOGETHER_CHECKS), busy_distorts=frozenset(TOGETHER_CHECKS))
