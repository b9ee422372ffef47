# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of gpufleet.validation.report, shared by the module's docs stub and its action plugin."""
from __future__ import annotations

from ansible_collections.gpufleet.validation.plugins.module_utils.results_dir import DEFAULT_RESULTS_DIR

REPORT_ARGUMENT_SPEC = dict(
    results_dir=dict(type="path", default=DEFAULT_RESULTS_DIR),
    run_id=dict(type="str", required=True),
    expected_hosts=dict(type="list", elements="str", default=[]),
    host_groups=dict(type="dict", default={}),
    rule_overrides=dict(type="dict", default={}),
    baselines_dir=dict(type="path"),
    rules_file=dict(type="path"),
    gated=dict(type="bool", default=True),
    profile=dict(type="str"),
    profiles=dict(type="dict", default={}),
)
