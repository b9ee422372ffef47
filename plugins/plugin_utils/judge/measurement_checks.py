# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where judge_against_baseline used to live: the generic baseline check is judge/baseline_checks.py, membw's repeat
check judge/copy_repeat_checks.py, and each probe's measurements its declaration (plugin_utils/probes/<probe>.py).

Kept only for judge/interconnect_checks.py, which imports judge_against_baseline from here; once it imports it from
judge/baseline_checks.py this module goes.
"""
from __future__ import annotations

from .baseline_checks import judge_against_baseline

__all__ = ["judge_against_baseline"]
