"""collective_hosts: the all-reduce across the GPUs of several hosts (a role and playbook of its own)."""
from __future__ import annotations

from ..collective.checks import collective_verified
from ..collective.judging import peak_busbw_metrics
from ...probe_kit.judging import ProbeJudging
from .metrics import PEAK_BUSBW


JUDGING = ProbeJudging(
    checks={"verified": collective_verified},
    metrics=peak_busbw_metrics(PEAK_BUSBW),
)
