"""Dossier section of the fabric probe: RDMA ports, Ethernet interfaces, each GPU's nearest NIC, GPUDirect, RDMA bandwidth.

Rates and bandwidths are in Gb/s (bits, as NICs and perftest state them), written out here: the generic table's "_gbps"
suffix reads GB/s.
"""
from __future__ import annotations

from typing import Any, Dict, List

from ...probe_kit.kit import (
    Cell, cell, table, MISSING, dig, is_unavailable, number_or_none, unavailable_reason, ProbeSection)
from .bandwidth import bandwidth_runs, run_label
from .ports import RELATION_WORDS, Port, listed, no_rdma_words, ports_of

COUNTERS_SHOWN = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors", "local_link_integrity_errors",
                  "excessive_buffer_overrun_errors")


def _text(value: Any) -> Cell:
    if value is MISSING or value is None:
        return Cell("—", "not reported")
    if is_unavailable(value):
        return Cell("n/a", unavailable_reason(value), "na")
    return Cell(str(value))


def _gbit(value: Any) -> Cell:
    number = number_or_none(value)
    if is_unavailable(value):
        return Cell("n/a", unavailable_reason(value), "na")
    return Cell("%g Gb/s" % number) if number is not None else Cell("—", "not reported")


def _port_row(port: Port) -> List[Cell]:
    state = "%s / %s" % (port.port.get("state"), port.port.get("phys_state"))
    counters = port.port.get("counters")
    counter_text = ", ".join("%s %s" % (name, counters[name]) for name in COUNTERS_SHOWN
                             if isinstance(counters, dict) and name in counters and not is_unavailable(counters[name]))
    return [Cell(port.label), Cell(state, "", "" if port.active else "bad"), Cell(port.rate_words()),
            _text(port.port.get("link_layer")), _text(port.port.get("gid_count")), _text(port.device.get("hca_type")),
            _text(port.device.get("fw_ver")), _text(port.device.get("pci_address")), _text(port.device.get("numa_node")),
            Cell(counter_text) if counter_text else _text(counters if is_unavailable(counters) else MISSING)]


def _interface_row(interface: Dict[str, Any]) -> List[Cell]:
    speed = interface.get("speed_mbps")
    speed_cell = Cell("%g Gb/s" % (speed / 1000.0)) if number_or_none(speed) is not None and speed > 0 else _text(speed)
    down = interface.get("virtual") is False and (interface.get("operstate") != "up" or interface.get("carrier") is not True)
    return [_text(interface.get("name")), _text(interface.get("kind")),
            Cell("%s%s" % (interface.get("operstate"), "" if interface.get("carrier") is True else ", no carrier"), "",
                 "warn" if down else ""),
            speed_cell, _text(interface.get("mtu")), _text(interface.get("driver")), _text(interface.get("pci_address")),
            _text(interface.get("rdma_device")), cell("carrier_changes", interface.get("carrier_changes", MISSING))]


def _gpu_row(gpu: Dict[str, Any]) -> List[Cell]:
    nearest = gpu.get("nearest_nic")
    if isinstance(nearest, dict) and not is_unavailable(nearest):
        relation = nearest.get("relation")
        nic = [_text(nearest.get("rdma_device")), _text(nearest.get("pci_address")),
               Cell(RELATION_WORDS.get(relation, str(relation)), "", "" if relation == "same_pcie_switch" else "warn")]
    else:
        nic = [_text(nearest if is_unavailable(nearest) else MISSING), Cell(""), Cell("")]
    return [_text(gpu.get("pci_address")), _text(gpu.get("numa_node"))] + nic


def _bandwidth_row(run: Dict[str, Any]) -> List[Cell]:
    if "error" in run:
        return [Cell(run_label(run)), Cell("error", str(run["error"]), "bad"), Cell(""), Cell("")]
    return [Cell(run_label(run)), _gbit(run.get("bandwidth_gbitps")), _gbit(run.get("bandwidth_peak_gbitps")),
            Cell("%s B, %s s" % (run.get("message_bytes"), run.get("duration_s")))]


def _gpudirect_note(data: Any) -> str:
    direct = dig(data, "gpudirect")
    if is_unavailable(direct):
        return "GPUDirect RDMA: not read (%s)." % unavailable_reason(direct)
    if not isinstance(direct, dict):
        return ""
    loaded = direct.get("nvidia_peermem_loaded")
    why = direct.get("nvidia_peermem_reason")
    if not isinstance(why, str) or not why:
        why = unavailable_reason(loaded) if is_unavailable(loaded) else "no reason recorded"
    peermem = "nvidia_peermem loaded" if loaded is True else "nvidia_peermem not loaded (%s)" % why
    dmabuf = dig(direct, "dmabuf", "kernel_supports")
    dmabuf_words = dig(direct, "dmabuf", "reason")
    dmabuf_text = "dma-buf %s" % ("available" if dmabuf is True else "not available" if dmabuf is False else "unknown")
    if isinstance(dmabuf_words, str) and dmabuf_words:
        dmabuf_text += " (%s)" % dmabuf_words
    return "GPUDirect RDMA: %s; %s." % (peermem, dmabuf_text)


def fabric_view(data: Any) -> Dict[str, Any]:
    ports, ports_why = ports_of(data)
    runs, runs_why = bandwidth_runs(data)
    gpus, gpus_why = listed(data, "gpus")
    interfaces, ethernet_why = listed(data, "ethernet")
    return {"note": _gpudirect_note(data), "plots": [], "tables": [
        table("RDMA ports (InfiniBand and RoCE)", ["port", "state / physical", "rate", "link layer", "GIDs", "HCA", "firmware",
              "PCI address", "NUMA node", "error counters since boot"], [_port_row(port) for port in ports],
              no_rdma_words(ports_why)),
        table("Network interfaces", ["interface", "kind", "state", "speed", "MTU", "driver", "PCI address", "RDMA device",
              "carrier changes"], [_interface_row(interface) for interface in interfaces], ethernet_why or "no network interface but lo"),
        table("Each GPU's nearest NIC", ["GPU", "NUMA node", "nearest RDMA device", "its PCI address", "where"],
              [_gpu_row(gpu) for gpu in gpus], gpus_why or "no NVIDIA GPU on the PCI bus"),
        table("RDMA write bandwidth (ib_write_bw)", ["run", "bandwidth", "peak", "message, duration"],
              [_bandwidth_row(run) for run in runs], runs_why or "no run recorded")]}


SECTION = ProbeSection(fabric_view)
