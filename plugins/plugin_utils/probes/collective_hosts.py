"""collective_hosts: the all-reduce across the GPUs of several hosts (a role and playbook of its own)."""
from __future__ import annotations

from ..judge.interconnect_checks import COLLECTIVE_HOSTS_CHECKS
from ..report_interconnect import collective_view
from .collective import collective_peak_metrics
from .declaration import ProbeDeclaration, ProbeSection

DECLARATION = ProbeDeclaration(
    name="collective_hosts",
    run_order=75,
    # the collective_hosts role's own default (roles/collective_hosts/defaults/main.yml); a test keeps them equal
    timeout_s=900,
    profiles={},
    checks=COLLECTIVE_HOSTS_CHECKS,
    metrics=collective_peak_metrics("collective_hosts"),
    section=ProbeSection(collective_view),
    own_playbook="playbooks/collective_hosts.yml",
    summary="NCCL all-reduce across the GPUs of a group of hosts, one rank per GPU",
)
