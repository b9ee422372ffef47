"""collective_hosts: the all-reduce across the GPUs of several hosts (a role and playbook of its own)."""
from __future__ import annotations

from ...judge.interconnect_checks import COLLECTIVE_HOSTS_CHECKS
from ..collective.judging import collective_peak_metrics
from ..judging import ProbeJudging


JUDGING = ProbeJudging(
    checks=COLLECTIVE_HOSTS_CHECKS,
    metrics=collective_peak_metrics("collective_hosts"),
)
