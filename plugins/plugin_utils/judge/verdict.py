# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's verdict from its checks: the worst status, root causes before what follows from them, a host where no GPU was
measured or nothing was checked, and what its profile promised (not_validated where a promise is not proven)."""
from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Optional

from .busy import settle_busy
from .causes import Causes, consequences_of, fold_consequences, root_causes
from .host_judgement import Promised
from .identity_checks import MOVED_CHECK_ID
from .model import Check, HostVerdict, host_check, worst_verdict
from .promises import prove_all, unproven_lines

STATUS_ORDER = {"fail": 0, "error": 1, "warn": 2}


def _why_no_gpu(envelopes: Mapping[str, Any], first: str = "") -> str:
    """The first two probes' reasons for not being ok: first's first (the probe that describes the machine, which looks
    for the GPUs)."""
    reasons = []
    for probe in sorted(envelopes, key=lambda name: (name != first, name)):
        envelope = envelopes.get(probe)
        if isinstance(envelope, Mapping) and envelope.get("status") != "ok" and envelope.get("reason"):
            reasons.append("%s: %s" % (probe, envelope["reason"]))
    return "; ".join(reasons[:2]) if reasons else "no probe measured a GPU (every GPU check was skipped)"


GPU_MEASURED_CHECK_ID = "host.gpu_measured"
NO_GPU_ACTION = "check_inventory"
NO_GPU_REMEDY = ("This host is not a GPU host, so nothing here was validated and nothing needs repair: take it out of the "
                 "inventory of GPU hosts. If it should have a GPU, seat it (bare metal) or pass it through to this virtual "
                 "machine.")


def gpu_measured_check(host: str, checks: List[Check], envelopes: Mapping[str, Any], expected: Optional[int],
                       expected_source: str, first: str = "") -> Optional[Check]:
    """None when some check judged a GPU, or when a failing or undecided check already keeps the host out; else why no
    GPU was measured: fail where the host should have GPUs, warn otherwise (a host without a GPU is not a validated GPU
    host, and acceptance refuses it)."""
    if not envelopes or any(check.status in ("fail", "error") for check in checks):
        return None
    if any(check.gpu_uuid and check.status in ("pass", "warn") for check in checks):
        return None
    why = _why_no_gpu(envelopes, first)
    if expected:
        return host_check(GPU_MEASURED_CHECK_ID, host, "", "fail", "no GPU was measured although this host should have %d (%s): %s"
                          % (expected, expected_source, why), value=0, unit="GPUs", reference=expected,
                          reference_source=expected_source, threshold=">= 1 GPU measured")
    if expected == 0:
        check = host_check(GPU_MEASURED_CHECK_ID, host, "", "warn", "%s, so nothing here was validated as a GPU host" % expected_source,
                           value=0, unit="GPUs", reference_source=expected_source, threshold=">= 1 GPU measured")
        check.action, check.remedy = NO_GPU_ACTION, NO_GPU_REMEDY
        return check
    return host_check(GPU_MEASURED_CHECK_ID, host, "", "warn", "no GPU was measured on this host and nothing says it should have one, "
                      "so it was not validated as a GPU host: %s" % why, value=0, unit="GPUs", threshold=">= 1 GPU measured")


def reason_line(check: Check, checks: List[Check]) -> str:
    """A root cause's line in the verdict's reasons, naming the checks that follow from it."""
    following = sorted(set(found.id for found in consequences_of(check, checks)))
    return "%s: %s%s" % (check.id, check.reason, " (+%d check%s that follow from it: %s)" % (
        len(following), "" if len(following) == 1 else "s", ", ".join(following)) if following else "")


def host_verdict(host: str, checks: List[Check], sku: Optional[str], sku_reason: str, groups: List[str],
                 causes: Optional[Causes] = None, independent: Iterable[str] = (), promised: Optional["Promised"] = None) -> HostVerdict:
    statuses = [check.status for check in checks]
    verdict = worst_verdict(statuses)
    if causes is not None:
        settle_busy(checks, causes.of)
        fold_consequences(checks, causes, independent)
    bad = [check for check in root_causes(checks) if check.status in STATUS_ORDER]
    bad.sort(key=lambda check: STATUS_ORDER[check.status])
    reasons = [reason_line(check, checks) for check in bad]
    if not any(status in ("pass", "warn", "fail", "error") for status in statuses):
        # Nothing was held against anything: that is not a pass.
        verdict = "warn"
        skipped = "; ".join("%s: %s" % (check.id, check.reason) for check in checks[:3])
        if len(checks) > 3:
            skipped += "; and %d more" % (len(checks) - 3)
        nothing = host_check("host.nothing_checked", host, "", "warn", "every check was skipped, so nothing on this host was "
                             "validated%s" % ((" (" + skipped + ")") if skipped else ""))
        checks = [nothing] + checks
        reasons = ["%s: %s" % (nothing.id, nothing.reason)]
    if promised is not None:
        promised.facts.not_a_gpu_host = next((check for check in checks if check.id == GPU_MEASURED_CHECK_ID
                                              and check.action == NO_GPU_ACTION), None)
    proofs = prove_all(promised.promises, checks, promised.rules, promised.facts) if promised is not None else []
    unproven = [proof for proof in proofs if proof.state == "not_proven"]
    # results that may be another host's prove nothing about this one
    moved = any(check.id == MOVED_CHECK_ID and check.status == "warn" for check in checks)
    if (moved or unproven) and verdict in ("pass", "warn"):
        verdict = "not_validated"
    if unproven and verdict == "not_validated":
        # what left the promises unproven first: the root cause they follow from (a busy GPU), then each of them
        roots = [root for root in dict.fromkeys(proof.root for proof in unproven) if root]
        first = [line for line in reasons if line.split(":", 1)[0] in roots]
        said = [line.split(":", 1)[0] for line in first]
        reasons = first + unproven_lines(unproven, said) + [line for line in reasons if line not in first]
    if moved:
        reasons = sorted(reasons, key=lambda line: not line.startswith(MOVED_CHECK_ID + ":"))
    return HostVerdict(host=host, verdict=verdict, reasons=reasons, checks=checks, sku=sku, sku_reason=sku_reason, groups=list(groups),
                       proofs=proofs)
