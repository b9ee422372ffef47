# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA bandwidth (Contract 2, data.rdma_bandwidth): each ib_write_bw run against a floor of its port's rate, and each
port's bandwidth of each memory kind as a metric keyed by the port ("mlx5_0/1").

Azure's node health checks hold GPUDirect ib_write_bw on H200 nodes to 360-400 Gb/s per 400 Gb/s NDR port
(REFERENCE.md): a floor of 90 % of the port's rate. No perftest, no RDMA device or the profile's choice is a skip.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ...probe_kit.kit import (
    make_check, param_source, reads_params, Metric, Check, dig, is_unavailable, number_or_none, unavailable_reason)
from .metrics import RDMA_WRITE_CUDA, RDMA_WRITE_HOST
from .ports import ports_of

MEMORY_SPECS = {"cuda": RDMA_WRITE_CUDA, "host": RDMA_WRITE_HOST}


def bandwidth_runs(data: Any) -> Tuple[List[Dict[str, Any]], str]:
    """(the recorded runs, why there are none: "" when there are)."""
    section = dig(data, "rdma_bandwidth")
    if is_unavailable(section):
        return [], "RDMA bandwidth was not measured: %s" % unavailable_reason(section)
    if not isinstance(section, dict):
        return [], "RDMA bandwidth was not recorded"
    runs = [run for run in section.get("runs") or [] if isinstance(run, dict)]
    if runs:
        return runs, ""
    tool = section.get("tool")
    if isinstance(section.get("skipped"), str) and section["skipped"]:
        return [], "RDMA bandwidth was not measured: %s" % section["skipped"]
    if is_unavailable(tool):
        return [], "RDMA bandwidth was not measured: %s" % unavailable_reason(tool)
    return [], "no ib_write_bw run was recorded"


def run_label(run: Dict[str, Any]) -> str:
    gpu = " (GPU %s)" % run.get("gpu_index") if run.get("gpu_index") is not None else ""
    return "%s port %s, %s memory%s, %s" % (run.get("rdma_device"), run.get("port"), run.get("memory"), gpu, run.get("mode", "?"))


def _port_rate(data: Any, run: Dict[str, Any]) -> Optional[float]:
    ports, unused_why = ports_of(data)
    for port in ports:
        if port.device.get("name") == run.get("rdma_device") and port.port.get("port") == run.get("port"):
            return port.rate_gbitps
    return None


@reads_params("min_pct_of_port_rate")
def rdma_bandwidth(host: str, data: Dict[str, Any], rule: Dict[str, Any], context: Any) -> List[Check]:
    """fail for each ib_write_bw run below params.min_pct_of_port_rate of its port's rate."""
    runs, why = bandwidth_runs(data)
    if not runs:
        return [make_check(rule, host, "skip", why)]
    share = float(rule["params"]["min_pct_of_port_rate"])
    checks = []
    for run in runs:
        label = run_label(run)
        if "error" in run:
            checks.append(make_check(rule, host, "error", "%s: ib_write_bw failed: %s" % (label, run["error"])))
            continue
        if isinstance(run.get("not_run"), str):
            checks.append(make_check(rule, host, "skip", "%s: not measured: %s" % (label, run["not_run"])))
            continue
        value, rate = number_or_none(run.get("bandwidth_gbitps")), _port_rate(data, run)
        if value is None:
            checks.append(make_check(rule, host, "error", "%s: no bandwidth recorded" % label))
            continue
        if rate is None:
            checks.append(make_check(rule, host, "skip", "%s: %.1f Gb/s; its port's rate is not known, so no floor" % (label, value)))
            continue
        floor = rate * share / 100.0
        status = "pass" if value >= floor else "fail"
        words = "" if status == "pass" else "; check the port (fabric.port_rate), the NIC's PCIe link and, for GPU memory, " \
            "GPUDirect (fabric.gpudirect) and the GPU-NIC path"
        checks.append(make_check(rule, host, status, "%s: %.1f Gb/s (peak %s) on a %g Gb/s port, floor %.0f Gb/s (%g %%)%s" % (
            label, value, "%.1f" % run["bandwidth_peak_gbitps"] if number_or_none(run.get("bandwidth_peak_gbitps")) is not None else "—",
            rate, floor, share, words), value=value, unit="Gb/s", reference=round(floor, 3),
            reference_source=param_source(rule, "min_pct_of_port_rate"), threshold=">= %g %% of the port's rate" % share))
    return checks


def port_id(run: Dict[str, Any]) -> Optional[str]:
    """The port a run measured, as its metric is keyed: "mlx5_0/1" (None where the run names no device or port)."""
    device, port = run.get("rdma_device"), run.get("port")
    if not isinstance(device, str) or not device or isinstance(port, bool) or not isinstance(port, int):
        return None
    return "%s/%d" % (device, port)


def bandwidth_metrics(data: Dict[str, Any]) -> List[Metric]:
    """Each port's bandwidth of each memory kind measured (the lower where a port was measured twice)."""
    runs, unused_why = bandwidth_runs(data)
    measured: Dict[Tuple[str, str], float] = {}
    for run in runs:
        value, memory, port = number_or_none(run.get("bandwidth_gbitps")), run.get("memory"), port_id(run)
        if value is not None and memory in MEMORY_SPECS and port is not None and "error" not in run:
            measured[memory, port] = min(value, measured.get((memory, port), value))
    return [Metric.of(MEMORY_SPECS[memory], None, None, value, device=port) for (memory, port), value in sorted(measured.items())]


BANDWIDTH_CHECKS = {"rdma_bandwidth": rdma_bandwidth}
