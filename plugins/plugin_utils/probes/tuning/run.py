"""tuning: how it runs (light: read for every host before its probes run)."""
from __future__ import annotations

from ...probe_kit.kit import ProbeRun

RUN = ProbeRun(
    name="tuning",
    run_order=15,
    timeout_s=120,
    # sysfs and procfs reads only (0.2 s on a host): the profiles that judge a host record the tuning they measured
    # under; health and quick stay the fastest sweeps (a profile of one's own adds tuning to them: docs/tuning.md)
    profiles={"acceptance": {}, "full": {}, "post_upgrade": {}, "interconnect": {}},
    needs_gpu=False,
    summary="PCIe payload, read request, link, ACS and ASPM on every GPU's path; kernel, C-state, cpufreq and memory tuning",
    disturbs_job=False,
)
