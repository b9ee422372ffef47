# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of gpufleet.validation.history_query, shared by the module's docs stub and its action plugin."""
from __future__ import annotations

from ansible_collections.gpufleet.validation.plugins.module_utils.results_dir import DEFAULT_RESULTS_DIR

HISTORY_QUERY_ARGUMENT_SPEC = dict(
    results_dir=dict(type="path", default=DEFAULT_RESULTS_DIR),
    query=dict(type="str", required=True, choices=["metric", "failures", "gpu"]),
    host=dict(type="str"),
    metric=dict(type="str"),
    gpu_uuid=dict(type="str"),
    since=dict(type="str"),
    until=dict(type="str"),
    verdicts=dict(type="list", elements="str"),
    more_than=dict(type="int"),
    format=dict(type="str", default="csv", choices=["csv", "json"]),
    dest=dict(type="path"),
)
