# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host whose clock is far from the controller's (issue 45): measured at each probe's start (controller_clock.py), the
largest of the host's probes is held to LIMIT_S. NTP keeps a healthy host within milliseconds; the measurement is good to
the two clocks' whole seconds, so the limit sits well above both. A skewed clock breaks logs, certificates and
timeouts between hosts too; the judge's own intervals are read on the controller's clock and are not hurt. Pure Python."""
from __future__ import annotations

from typing import Any, List, Mapping

from ..result_fields import dig
from .model import Check

CHECK_ID = "host.clock_skew"
LIMIT_S = 10.0


def clock_skew_checks(host: str, envelopes: Mapping[str, Any]) -> List[Check]:
    """One warn when a probe of this host measured its clock more than LIMIT_S from the controller's; else nothing."""
    measured = [(abs(value), value, probe) for probe, envelope in sorted(envelopes.items())
                for value in [dig(envelope, "controller", "host_clock_ahead_s")]
                if isinstance(value, (int, float)) and not isinstance(value, bool)]
    if not measured:
        return []
    unused_size, ahead, probe = max(measured)
    if abs(ahead) <= LIMIT_S:
        return []
    return [Check(id=CHECK_ID, host=host, probe=probe, status="warn", value=ahead, unit="s", reference=0,
                  reason="this host's clock is at least %.0f s %s the controller's (measured at the start of probe %s): "
                         "logs, certificates and timeouts between hosts go wrong with it; the judge reads its own intervals "
                         "on the controller's clock" % (abs(ahead), "ahead of" if ahead > 0 else "behind", probe),
                  reference_source="the controller's clock at each probe's start",
                  threshold="within %g s of the controller's" % LIMIT_S)]
