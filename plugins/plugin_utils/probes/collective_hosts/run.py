"""collective_hosts: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import Headline, ProbeRun

RUN = ProbeRun(
    name="collective_hosts",
    run_order=75,
    # the collective_hosts role's own default (roles/collective_hosts/defaults/main.yml); a test keeps them equal
    timeout_s=900,
    profiles={},
    own_playbook="playbooks/collective_hosts.yml",
    summary="NCCL all-reduce across the GPUs of a group of hosts, one rank per GPU",
    headlines=(Headline("collective_hosts.verified"),),
)
