# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of gpufleet.validation.calibrate_baseline, shared by the module's docs stub and its action plugin."""
from __future__ import annotations

from ansible_collections.gpufleet.validation.plugins.module_utils.results_dir import DEFAULT_RESULTS_DIR

# The run id that names the run <results_dir>/latest points at.
LATEST_RUN = "latest"

CALIBRATE_BASELINE_ARGUMENT_SPEC = dict(
    results_dir=dict(type="path", default=DEFAULT_RESULTS_DIR),
    run_id=dict(type="str", default=LATEST_RUN),
    sku=dict(type="str", required=True),
    hosts=dict(type="list", elements="str", default=[]),
    output_dir=dict(type="path", required=True),
    replace=dict(type="bool", default=False),
    baselines_dir=dict(type="path"),
    rules_file=dict(type="path"),
    rule_overrides=dict(type="dict", default={}),
    facts=dict(type="dict", default={}),
)
