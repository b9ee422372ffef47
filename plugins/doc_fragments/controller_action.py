# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    """What every module that runs in its action plugin on the controller shares (act, calibrate_baseline, check_inputs,
    open_run, report): its author and attributes (each module documents its own check_mode); RESULTS_DIR: the
    results_dir option of the modules that read the stored probe results (calibrate_baseline, report)."""

    DOCUMENTATION = r"""
author:
  - gpufleet.validation contributors (@gpufleet)
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

    RESULTS_DIR = r"""
options:
  results_dir:
    description:
      - Directory on the controller where the probe results are stored.
    type: path
    default: results
"""
