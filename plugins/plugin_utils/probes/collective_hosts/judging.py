"""collective_hosts: the all-reduce across the GPUs of several hosts (a role and playbook of its own)."""
from __future__ import annotations

from ...probe_kit.kit import collective_verified, peak_busbw_metrics, ProbeJudging
from .metrics import PEAK_BUSBW


JUDGING = ProbeJudging(
    checks={"verified": collective_verified},
    metrics=peak_busbw_metrics(PEAK_BUSBW),
)
