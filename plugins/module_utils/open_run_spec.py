# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of gpufleet.validation.open_run, shared by the module's docs stub and its action plugin."""
from __future__ import annotations

RUN_ARGUMENT_SPEC = dict(
    results_dir=dict(type="path", default="results"),
    run_id=dict(type="str", required=True),
    resume=dict(type="bool", default=False),
    profile=dict(type="str"),
)
