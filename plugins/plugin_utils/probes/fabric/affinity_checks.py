# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check of each GPU's nearest NIC against the board the SKU's baseline describes (HGX: a NIC on each GPU's PCIe switch).

GPUDirect RDMA between a GPU and a NIC on one PCIe switch stays off the root complex; farther, it crosses the CPU (or the
inter-socket link) and NCCL's bandwidth falls. Judged on the SKU's whole board only: a VM slice has the NICs it was given.
"""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import make_check, Check, is_unavailable, unavailable_reason
from .ports import RELATION_WORDS, RELATIONS, expected, listed, whole_board


def gpu_nic_affinity(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """fail for each GPU whose nearest NIC is farther than the baseline's gpu_nic_affinity."""
    wanted, source = expected(context, "gpu_nic_affinity")
    if wanted is None:
        return [make_check(rule, host, "skip", "%s; each GPU's nearest NIC is recorded, not judged" % source)]
    board, board_words = whole_board(context)
    if not board:
        return [make_check(rule, host, "skip", "%s: the board's GPU-NIC pairing is not judged here" % board_words)]
    gpus, why = listed(data, "gpus")
    if not gpus:
        return [make_check(rule, host, "skip", "no NVIDIA GPU listed on this host's PCI bus%s" % (" (%s)" % why if why else ""))]
    limit = RELATIONS.index(wanted) if wanted in RELATIONS else 0
    checks = []
    for gpu in gpus:
        label = "GPU %s" % gpu.get("pci_address")
        nearest = gpu.get("nearest_nic")
        if is_unavailable(nearest) or not isinstance(nearest, dict):
            checks.append(make_check(rule, host, "fail", "%s has no NIC near it (%s); the board should have one %s (%s)" % (
                label, unavailable_reason(nearest) if is_unavailable(nearest) else "not recorded", RELATION_WORDS.get(wanted, wanted),
                source), threshold="a NIC %s" % RELATION_WORDS.get(wanted, wanted)))
            continue
        relation = nearest.get("relation")
        nic = "%s (%s)" % (nearest.get("rdma_device"), nearest.get("pci_address"))
        rank = RELATIONS.index(relation) if relation in RELATIONS else len(RELATIONS)
        status = "pass" if rank <= limit else "fail"
        words = "" if status == "pass" else "; the board should have one %s (%s): a NIC is missing, moved or disabled, or " \
            "the GPU sits in another slot" % (RELATION_WORDS.get(wanted, wanted), source)
        checks.append(make_check(rule, host, status, "%s: nearest NIC %s is %s%s" % (
            label, nic, RELATION_WORDS.get(relation, str(relation)), words), value=relation,
            reference=wanted, reference_source=source, threshold="a NIC %s" % RELATION_WORDS.get(wanted, wanted)))
    return checks


AFFINITY_CHECKS = {"gpu_nic_affinity": gpu_nic_affinity}
