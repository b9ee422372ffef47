# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of gpufleet.validation.act, shared by the module's docs stub and its action plugin."""
from __future__ import annotations

from ansible_collections.gpufleet.validation.plugins.module_utils.results_dir import DEFAULT_RESULTS_DIR

SCHEDULERS = ("none", "slurm")
DRAINABLE_VERDICTS = ("fail", "error", "unreachable")

ACT_ARGUMENT_SPEC = dict(
    results_dir=dict(type="path", default=DEFAULT_RESULTS_DIR),
    run_id=dict(type="str", required=True),
    hosts=dict(type="list", elements="str", default=[]),
    scheduler=dict(type="str", default="none", choices=list(SCHEDULERS)),
    node_names=dict(type="dict", default={}),
    drain_on=dict(type="list", elements="str", default=["fail"], choices=list(DRAINABLE_VERDICTS)),
    max_drain_percent=dict(type="float", default=10.0),
    min_drain_nodes=dict(type="int", default=1),
    intake_reason=dict(type="str", default=""),
    slurm_conf=dict(type="path"),
    sinfo_path=dict(type="str", default="sinfo"),
    scontrol_path=dict(type="str", default="scontrol"),
)
