# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of what RDMA traffic needs beyond a port that is up: a GID on each RoCE port, and GPUDirect RDMA.

A RoCE port without a GID has no address to open a connection with (its netdev has no IP, or is down). GPUDirect
RDMA lets the HCA read and write GPU memory: it needs nvidia_peermem (the peer-memory client) or the dma-buf path
(a kernel with dma-buf and an NVIDIA open kernel module driver). A host with no RDMA device or no GPU is a skip.
"""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import make_check, Check, dig, is_unavailable, number_or_none, unavailable_reason
from .ports import ignored, listed, no_rdma_words, ports_of, rdma_devices

ROCE = "Ethernet"


def roce_gids(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """fail for each active RoCE port whose GID table is empty; InfiniBand ports are addressed by LID, not judged here."""
    ports, why = ports_of(data)
    if not ports:
        return [make_check(rule, host, "skip", no_rdma_words(why))]
    roce = [port for port in ports if port.text("link_layer") == ROCE and port.key not in ignored(rule)]
    if not roce:
        return [make_check(rule, host, "skip", "no RoCE port (every RDMA port is %s): GIDs matter for RoCE only" % ", ".join(
            sorted(set(str(port.port.get("link_layer")) for port in ports))))]
    checks = []
    for port in roce:
        count = port.port.get("gid_count")
        if is_unavailable(count) or number_or_none(count) is None:
            checks.append(make_check(rule, host, "error", "%s: its GID table could not be read (%s)" % (
                port.label, unavailable_reason(count) if is_unavailable(count) else "not recorded")))
        elif not port.active:
            checks.append(make_check(rule, host, "skip", "%s is not up (port_state says why): its GIDs are not judged" % port.label))
        elif int(count) == 0:
            checks.append(make_check(rule, host, "fail", "%s (RoCE) has no GID: RDMA connections over it cannot be addressed; give "
                                     "its netdev (%s) an IP address and bring it up" % (port.label, ", ".join(
                                         str(name) for name in port.device.get("netdevs") or []) or "none listed"),
                                     value=0, unit="GIDs", threshold=">= 1 GID"))
        else:
            checks.append(make_check(rule, host, "pass", "%s (RoCE) has %d GID(s)" % (port.label, int(count)),
                                     value=int(count), unit="GIDs", threshold=">= 1 GID"))
    return checks


def gpudirect(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """fail when a host with RDMA devices and NVIDIA GPUs has neither nvidia_peermem loaded nor the dma-buf path."""
    devices, why = rdma_devices(data)
    if not devices:
        return [make_check(rule, host, "skip", "%s: GPUDirect RDMA has no NIC to serve" % no_rdma_words(why))]
    gpus, gpus_why = listed(data, "gpus")
    if not gpus:
        return [make_check(rule, host, "skip", "no NVIDIA GPU on this host's PCI bus%s: GPUDirect RDMA has no GPU memory to reach" % (
            " (%s)" % gpus_why if gpus_why else ""))]
    peermem = dig(data, "gpudirect", "nvidia_peermem_loaded")
    # dma-buf export of GPU memory needs a kernel of 5.12 or later and NVIDIA's open kernel module: the kernel alone is
    # not the path
    kernel, open_module = dig(data, "gpudirect", "dmabuf", "kernel_supports"), dig(data, "gpudirect", "dmabuf", "open_kernel_module")
    if kernel is True and open_module is True:
        dmabuf: Any = True
    elif kernel is False or open_module is False:
        dmabuf = False
    else:
        dmabuf = kernel if kernel is not True else open_module
    if peermem is True:
        return [make_check(rule, host, "pass", "nvidia_peermem is loaded: the %d RDMA device(s) can reach the %d GPU(s)' memory "
                           "(GPUDirect RDMA)" % (len(devices), len(gpus)), threshold="nvidia_peermem loaded or dma-buf")]
    peermem_words = dig(data, "gpudirect", "nvidia_peermem_reason")
    peermem_words = peermem_words if isinstance(peermem_words, str) else unavailable_reason(peermem) if is_unavailable(peermem) else ""
    dmabuf_words = dig(data, "gpudirect", "dmabuf", "reason")
    dmabuf_words = dmabuf_words if isinstance(dmabuf_words, str) else ""
    if dmabuf is True:
        return [make_check(rule, host, "pass", "nvidia_peermem is not loaded (%s), but the dma-buf path is available (%s): "
                           "GPUDirect RDMA works for software that uses it (NCCL 2.13+, perftest --use_cuda_dmabuf)" % (
                               peermem_words or "no reason recorded", dmabuf_words or "kernel supports dma-buf"),
                           threshold="nvidia_peermem loaded or dma-buf")]
    if is_unavailable(dmabuf) and not dmabuf_words:
        dmabuf_words = unavailable_reason(dmabuf)
    if peermem is False:
        return [make_check(rule, host, "fail", "nvidia_peermem is not loaded (%s) and the dma-buf path is not available (%s): "
                           "RDMA to GPU memory goes through host memory, or fails; modprobe nvidia-peermem (and load it at boot)"
                           % (peermem_words or "no reason recorded", dmabuf_words or "no reason recorded"),
                           threshold="nvidia_peermem loaded or dma-buf")]
    return [make_check(rule, host, "error", "whether nvidia_peermem is loaded could not be read (%s)" % (
        peermem_words or "gpudirect not recorded"))]


RDMA_PATH_CHECKS = {"roce_gids": roce_gids, "gpudirect": gpudirect}
