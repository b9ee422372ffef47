# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    """The attributes every module that runs in its action plugin on the controller shares (act, calibrate_baseline,
    check_inputs, open_run, report); each module documents its own check_mode."""

    DOCUMENTATION = r"""
attributes:
  diff_mode:
    support: none
    description: Produces no diff.
  action:
    support: full
    description: All the work happens in the action plugin of the same name.
  async:
    support: none
    description: Not supported.
"""
