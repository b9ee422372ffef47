# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's times of one probe run, and how far the host's clock is from the controller's (issue 45).

A host's clock a day ahead made a counter's rise of 2000 symbol errors read as "83.3 an hour" over a day instead of
6.55e5 an hour over 15 s. The probe action writes the controller's times into each envelope (``controller``):
``started``, when the job started on the host by the controller's clock, and ``ended``, when its result came back;
rates and intervals between runs are read on that clock (result_fields.start_interval). The probe writes its own start
by the host's clock (``started``); it lies between the moment the controller asked for the job to start and the
moment the start's answer came back, so a host start outside that window, by more than the two clocks' one-second
resolution, is the host's clock being off by at least that much (``host_clock_ahead_s``, negative when behind; 0 inside
the window). Pure Python.
"""
from __future__ import annotations

import datetime
from typing import Any, Dict, Optional

from .result_fields import iso_seconds

RESOLUTION_S = 1.5  # both starts are written in whole seconds


def _iso(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat(timespec="seconds")


def host_clock_ahead_s(host_started: Any, window_start: float, window_end: float) -> Optional[float]:
    """Seconds the host's clock is ahead of the controller's (negative: behind), at least; 0.0 within the window; None
    when the host's start is not a time."""
    started = iso_seconds(host_started)
    if started is None:
        return None
    if started < window_start - RESOLUTION_S:
        return round(started - window_start, 1)
    if started > window_end + RESOLUTION_S:
        return round(started - window_end, 1)
    return 0.0


def controller_times(job_started: float, start_answered: float, ended: float, host_started: Any) -> Dict[str, Any]:
    """The envelope's ``controller`` block from the controller's Unix times."""
    return {"started": _iso(job_started), "ended": _iso(ended),
            "host_clock_ahead_s": host_clock_ahead_s(host_started, job_started, max(job_started, start_answered))}
