# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the judge produces: checks, host verdicts, the fleet judgement. Pure Python, no Ansible, no torch."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Optional

from .rules import CheckTexts

CHECK_STATUSES = ("pass", "warn", "fail", "skip", "error")
# A host's verdict; "unreachable" is never a pass, nor is "not_validated": a headline its profile promises was not
# proven on it (judge/promises.py).
VERDICTS = ("fail", "error", "unreachable", "not_validated", "warn", "pass")
VERDICT_RANK = {"pass": 0, "warn": 1, "not_validated": 2, "unreachable": 3, "error": 4, "fail": 5}
GATING_VERDICTS = ("fail", "error", "unreachable", "not_validated")
VERDICT_WORDS = {"not_validated": "not validated"}
# Host-level checks that keep a host out of acceptance even as a warning: nothing on it was validated as a GPU host.
# host.not_run: the profile's probes that would disturb a job on the node were not run (judge/not_run.py).
GATE_BLOCKING_CHECKS = ("host.gpu_measured", "host.nothing_checked", "host.not_run")


@dataclass(slots=True)  # a run of 10,000 hosts holds over a million of them (docs/scale.md)
class Check:
    """One rule held against one host (and one GPU where it applies)."""

    id: str                      # the rule's id, e.g. "health.ecc_volatile_uncorrected"
    host: str                    # inventory name
    probe: str                   # the probe whose result it reads ("" for host-level checks)
    status: str                  # pass | warn | fail | skip | error
    reason: str                  # a sentence a person can act on, always set
    gpu_uuid: Optional[str] = None
    gpu_index: Optional[int] = None
    value: Any = None            # what was measured (number, text, bool, list) or None
    unit: str = ""               # unit of value and reference ("" when none)
    reference: Any = None        # what the value was held against
    reference_source: str = ""   # where the reference came from: baseline file + source, fleet median, previous run
    threshold: str = ""          # the rule's threshold in words, e.g. "== 0", ">= 85 % of reference"
    because: str = ""            # the id of this host's check this one follows from ("" for a root cause; judge/causes.py, busy.py)
    action: str = ""             # what to do where it differs from the rule's action for this cause (rules.ACTIONS)
    remedy: str = ""             # how, where it differs from the rule's remedy
    device: Optional[str] = None  # the device, not a GPU, of a metric keyed by one (a port "mlx5_0/1"; judge/metrics.py)

    def to_dict(self) -> Dict[str, Any]:
        # Shallow on purpose: asdict() deep-copies every value, which dominates exporting 100,000 checks.
        document = {name: getattr(self, name) for name in CHECK_FIELDS}
        if self.device is not None:
            document["device"] = self.device
        return document


# Every field but device, which a check's document holds only where it has one (most checks are of a GPU or the host).
CHECK_FIELDS = tuple(check_field.name for check_field in fields(Check) if check_field.name != "device")


PROOF_STATES = ("proven", "not_proven", "not_promised")


@dataclass
class Proof:
    """A headline a host's profile promises (judge/promises.py), on that host: proven, not_proven or not_promised."""

    check: str          # the promised rule's id, e.g. "membw.bandwidth"
    probe: str
    state: str          # one of PROOF_STATES
    because: str        # what was found (proven: how it was judged)
    fix: str = ""       # not proven: what to do
    root: str = ""      # not proven because of this host's check of that id (a busy GPU, a broken driver), else ""

    def to_dict(self) -> Dict[str, str]:
        # by hand: asdict() deep-copies, nine times per host in fleet.json (docs/scale.md)
        return {"check": self.check, "probe": self.probe, "state": self.state, "because": self.because, "fix": self.fix,
                "root": self.root}


@dataclass
class HostVerdict:
    host: str
    verdict: str                          # one of VERDICTS
    reasons: List[str]                    # one sentence per root cause that is not pass/skip (worst first)
    checks: List[Check]
    sku: Optional[str] = None             # baseline id, e.g. "h200-sxm"; None when unknown
    sku_reason: str = ""                  # how the SKU was identified, or why it is unknown
    groups: List[str] = field(default_factory=list)
    # Each headline its profile promises, proven or not (judge/promises.py); [] where nothing was promised
    proofs: List[Proof] = field(default_factory=list)
    # Every metric value and setting the judge compared on it (judge/fleet.py compared_values): what fleet.json keeps
    # for the run index (docs/history.md); [] for a host not reached or whose judging raised
    metrics: List[Dict[str, Any]] = field(default_factory=list)
    settings: List[Dict[str, Any]] = field(default_factory=list)
    # The verdict of its measurements, before its trend checks (judge/trend_step.py): what history.flapping counts in
    # the runs after this one; "" where no trend check ran
    measured_verdict: str = ""
    # The headline metric ids it is its group's single lowest on in this run (judge/trends.py group_lowest)
    lowest_of_group: List[str] = field(default_factory=list)
    # {(metric id, GPU uuid or device or ""): (the value its headline's check fails below, in words)}
    # (judge/trend_step.fail_floors): what the dossier's history plots draw; not in fleet.json
    floors: Dict[Any, Any] = field(default_factory=dict)

    def proofs_in(self, state: str) -> List[Proof]:
        return [proof for proof in self.proofs if proof.state == state]

    def to_dict(self) -> Dict[str, Any]:
        document = asdict(self)
        document["checks"] = [check.to_dict() for check in self.checks]
        # keyed by (metric, GPU) pairs, which JSON cannot key by: a list of entries
        document["floors"] = [{"metric": metric, "subject": subject, "value": value, "words": words}
                              for (metric, subject), (value, words) in sorted(self.floors.items())]
        return document


@dataclass
class FleetJudgement:
    run_id: str
    hosts: Dict[str, HostVerdict]
    # Rules that matched no result anywhere, as checks with host "" (warn; skip where their probe gave no data), and the
    # warnings about the run itself, with no probe (run_judgement.py); unmatched_kinds.py says which are findings.
    unmatched_rules: List[Check] = field(default_factory=list)
    # Per SKU (or "unknown"), per metric id: {"median": x, "mad": y, "count": n, "unit": u}.
    fleet_statistics: Dict[str, Dict[str, Dict[str, Any]]] = field(default_factory=dict)
    previous_run_id: Optional[str] = None
    # Settings some hosts of a SKU have unlike most (judge/settings.py Minority.to_dict), e.g. MaxPayload 128 on 3 of 24.
    setting_minorities: List[Dict[str, Any]] = field(default_factory=list)
    # Probes that took much longer on some hosts than on their group's others (judge/slow_probes.py's entries).
    slow_probes: List[Dict[str, Any]] = field(default_factory=list)
    # The shipped rules this run disabled or downgraded, and for which hosts (judge/weakened_rules.py's entries).
    weakened_rules: List[Dict[str, Any]] = field(default_factory=list)
    # How the reports title each check and what they say to do (the rules' title/remedy/action); not exported.
    texts: CheckTexts = field(default_factory=CheckTexts)
    # Whether the run enforces its gate (gpufleet_gate): the reports say so; set by whoever renders it.
    gate_enforced: bool = True

    def hosts_worst_first(self) -> List[HostVerdict]:
        return sorted(self.hosts.values(), key=lambda verdict: (-VERDICT_RANK[verdict.verdict], verdict.host))

    def to_dict(self) -> Dict[str, Any]:
        return {
            "run_id": self.run_id,
            "previous_run_id": self.previous_run_id,
            "hosts": {name: verdict.to_dict() for name, verdict in sorted(self.hosts.items())},
            "unmatched_rules": [check.to_dict() for check in self.unmatched_rules],
            "fleet_statistics": self.fleet_statistics,
            "setting_minorities": self.setting_minorities,
            "slow_probes": self.slow_probes,
            "weakened_rules": self.weakened_rules,
        }


def host_check(check_id: str, host: str, probe: str, status: str, reason: str, **fields: Any) -> Check:
    """A check the judge makes of a host itself (no rule of a probe behind it: a result missing, drift, a fleet outlier)."""
    return Check(id=check_id, host=host, probe=probe, status=status, reason=reason, **fields)


def error_verdict(host: str, check_id: str, reason: str, groups: List[str]) -> HostVerdict:
    """A host that could not be judged or rendered: verdict error, one check of that id with the reason."""
    return HostVerdict(host=host, verdict="error", reasons=["%s: %s" % (check_id, reason)],
                       checks=[Check(id=check_id, host=host, probe="", status="error", reason=reason)], sku=None,
                       sku_reason="not identified: see %s" % check_id, groups=list(groups))


def blocks_gate(verdict: "HostVerdict") -> bool:
    """Whether the gate refuses this host: a gating verdict, or a host where no GPU was measured."""
    return verdict.verdict in GATING_VERDICTS or any(
        check.id in GATE_BLOCKING_CHECKS and check.status in ("warn", "fail", "error") for check in verdict.checks)


def worst_verdict(statuses: List[str]) -> str:
    """The host verdict from its checks' statuses: any fail → fail, else error, else warn, else pass."""
    for status in ("fail", "error", "warn"):
        if status in statuses:
            return status
    return "pass"
