"""Which of a run's unmatched rules are findings: the one sorting that the index, fleet.json, junit.xml and
gpufleet.prom share. Pure: stdlib, the judge's model and the probe registry."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..module_utils.envelope_statuses import MEASURED_STATUSES
from .judge.model import Check
from .probe_kit.registry import profile_probes

# A rule of a probe the profile runs that matched no result on any host: a finding (gpufleet_unmatched_rules counts these).
MATCHED_NOTHING = "matched_nothing"
# A rule of a probe the run's profile does not run (its probe gave no data anywhere): no finding.
NOT_RUN_BY_PROFILE = "not_run_by_profile"
# A rule of a probe that ran but measured on no host (p2p on 1-GPU hosts): no finding; the hosts' own checks say why.
NOT_MEASURED = "not_measured"
# Not a rule: a warning about the run itself (baselines.load, baselines.replaced, store.run_order; run_judgement.py).
RUN_WARNING = "run_warning"
UNMATCHED_KINDS = (MATCHED_NOTHING, NOT_RUN_BY_PROFILE, NOT_MEASURED, RUN_WARNING)


@dataclass
class RunReach:
    """What a run ran: its profile's probes (None: a profile of the inventory's own, or none recorded), and the probes
    that ran but measured on no host, with the statuses they ended with."""
    probes: Optional[Tuple[str, ...]] = None
    unmeasured: Dict[str, str] = field(default_factory=dict)


def run_profile(run: Any) -> Tuple[str, Optional[List[str]]]:
    """(the profile(s) the run's hosts were probed with, its probes) from each host's stored inputs; probes None when
    a profile is the inventory's own (gpufleet_profiles: not stored) or none was recorded."""
    hosts = getattr(run, "hosts", ())
    names = sorted({host.inputs.get("profile") for host in hosts if isinstance(host.inputs.get("profile"), str)})
    if not names:
        return "", None
    probes: List[str] = []
    for name in names:
        try:
            probes.extend(profile_probes(name))
        except ValueError:
            return ", ".join(names), None
    return ", ".join(names), sorted(set(probes))


def unmeasured_probes(run: Any) -> Dict[str, str]:
    """Probes that ran on some host but measured on none, with the statuses they ended with ("unavailable")."""
    statuses: Dict[str, set] = {}
    for host in getattr(run, "hosts", ()):
        for name, entry in host.probes.items():
            statuses.setdefault(name, set()).add(entry.status)
    return {name: ", ".join(sorted(seen)) for name, seen in statuses.items() if not seen & set(MEASURED_STATUSES)}


def run_reach(run: Any) -> RunReach:
    """The run's RunReach from its stored hosts; a run not given (None) ran no profile known here."""
    probes = run_profile(run)[1]
    return RunReach(tuple(probes) if probes is not None else None, unmeasured_probes(run))


def unmatched_kind(check: Check, profile_probes_run: Optional[Sequence[str]], unmeasured: Mapping[str, str]) -> str:
    """The kind of one entry of FleetJudgement.unmatched_rules. A skipped rule (its probe gave no data on any host) of a
    probe that is not among the profile's probes (or of any probe, where the profile's are not known) was not run by
    the profile; one of a probe that ran but measured nowhere was not measured; an entry without a probe is about the
    run, not a rule; every other rule matched nothing although the profile runs its probe."""
    if not check.probe:
        return RUN_WARNING
    if check.status == "skip":
        if profile_probes_run is None or check.probe not in profile_probes_run:
            return NOT_RUN_BY_PROFILE
        if check.probe in unmeasured:
            return NOT_MEASURED
    return MATCHED_NOTHING


def kind_of(check: Check, reach: RunReach) -> str:
    return unmatched_kind(check, reach.probes, reach.unmeasured)


def of_kind(checks: Sequence[Check], reach: RunReach, kind: str) -> List[Check]:
    """The entries of that kind, in their order."""
    return [check for check in checks if kind_of(check, reach) == kind]
