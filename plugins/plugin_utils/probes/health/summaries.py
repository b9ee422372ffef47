# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health data's summary fields and the lists they summarise (judge/summaries.py holds each to its list). Pure Python."""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import Check, Summary, summaries_agree as held_to_their_lists

HEALTH_SUMMARIES = (
    Summary("nvlink.active_count", "nvlink.links", where=(("state", "active"),), each="gpus"),
    Summary("nvlink.supported_count", "nvlink.links", each="gpus"),
    Summary("device_nodes.gpu_node_count", "device_nodes.gpu_node_minors"),
    Summary("device_nodes.nvml_gpu_count", "gpus"),
    Summary("topology.gpu_count", "gpus"),
    Summary("cuda_init.device_count", "cuda_init.devices"),
    Summary("kernel_log.hardware_xid_count", "kernel_log.xid_events", where=(("hardware", True),)),
    Summary("kernel_log.xid_counts", "kernel_log.xid_events", by="xid"),
)


def summaries_agree(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    return held_to_their_lists(HEALTH_SUMMARIES, host, data, rule)


SUMMARY_CHECKS = {"summaries_agree": summaries_agree}
