"""The health probe's summary for the dossier: GPU table, topology matrix, device nodes, CUDA init, XIDs, processes.

It reads the field names of schemas/health.schema.json and no others (what is stored has been held to that schema).
It reads them defensively all the same: any key may be missing, unavailable or of another type, and the summary
still renders (a missing value reads "—", an unavailable one "n/a" with its reason).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from ...probe_kit.kit import (
    Cell, cell, format_scalar, format_value, unit_for, MISSING, dig, is_unavailable, number_or_none,
    unavailable_reason, bar_chart, clock_event_table, ProbeSection)


def field(value: Any, *path: Any) -> Tuple[str, Any]:
    """(field name, value) at path: the name gives the value its unit."""
    return str(path[-1]), dig(value, *path)


def current_of_max(current: Tuple[Optional[str], Any], maximum: Tuple[Optional[str], Any],
                   prefix: str = "", separator: str = " / ", flag_below: str = "") -> Cell:
    """"current / max unit"; flag_below marks a current value under its maximum."""
    (cur_key, cur), (max_key, top) = current, maximum
    if cur is MISSING and top is MISSING:
        return Cell("—", "not reported")
    for value in (cur, top):
        if is_unavailable(value):
            return Cell("n/a", unavailable_reason(value), "na")
    unit = unit_for(cur_key) or unit_for(max_key)
    texts = [format_scalar(value) if value is not MISSING else "—" for value in (cur, top)]
    text = prefix + separator.join(texts) + (" " + unit if unit else "")
    below = number_or_none(cur) is not None and number_or_none(top) is not None and number_or_none(cur) < number_or_none(top)
    return Cell(text, "below its maximum" if below and flag_below else "", flag_below if below else "")


def _count_flag(value: Any) -> str:
    number = number_or_none(value)
    return "bad" if (number is not None and number > 0) or value is True else ""


GPU_COLUMNS = ("GPU", "name", "UUID", "serial", "PCI bus", "memory", "SM clock now / max", "memory clock now / max",
               "power draw / limit", "temperature", "ECC mode", "ECC volatile uncorrectable",
               "remapped rows pending", "remapped rows failed", "PCIe gen now / max", "PCIe width now / max",
               "NVLink active / supported", "NVLink errors replay / recovery / CRC", "NVSwitch fabric", "persistence", "MIG")


def gpu_row(gpu: Any) -> List[Cell]:
    ecc_uncorrectable = field(gpu, "ecc", "volatile_uncorrected_count")
    remap_pending = field(gpu, "remapped_rows", "pending")
    remap_failed = field(gpu, "remapped_rows", "failure")
    return [
        cell("index", dig(gpu, "index")),
        cell("name", dig(gpu, "name")),
        cell("uuid", dig(gpu, "uuid")),
        cell("serial", dig(gpu, "serial")),
        cell(*field(gpu, "pci", "bus_id")),
        current_of_max(field(gpu, "memory", "used_mib"), field(gpu, "memory", "total_mib")),
        current_of_max(field(gpu, "clocks", "sm_mhz"), field(gpu, "clocks", "max_sm_mhz")),
        current_of_max(field(gpu, "clocks", "memory_mhz"), field(gpu, "clocks", "max_memory_mhz")),
        current_of_max(field(gpu, "power", "draw_w"), field(gpu, "power", "limit_w")),
        cell(*field(gpu, "temperature", "gpu_c")),
        cell(*field(gpu, "ecc", "mode_current")),
        cell(ecc_uncorrectable[0], ecc_uncorrectable[1], _count_flag(ecc_uncorrectable[1])),
        cell(remap_pending[0], remap_pending[1], _count_flag(remap_pending[1])),
        cell(remap_failed[0], remap_failed[1], _count_flag(remap_failed[1])),
        # An idle GPU may lower its PCIe generation to save power, so this is a warning, not a failure.
        current_of_max(field(gpu, "pcie", "current_link_gen"), field(gpu, "pcie", "max_link_gen"), "Gen ", flag_below="warn"),
        current_of_max(field(gpu, "pcie", "current_link_width"), field(gpu, "pcie", "max_link_width"), "x",
                       separator=" / x", flag_below="bad"),
        current_of_max(field(gpu, "nvlink", "active_count"), field(gpu, "nvlink", "supported_count"), flag_below="bad"),
        nvlink_errors_cell(dig(gpu, "nvlink_errors")),
        fabric_cell(dig(gpu, "fabric")),
        cell(*field(gpu, "persistence_mode")),
        cell(*field(gpu, "mig_mode")),
    ]


def nvlink_errors_cell(errors: Any) -> Cell:
    """Replay / recovery / CRC (flit + data) errors since the driver loaded, summed over the GPU's links."""
    totals = dig(errors, "totals")
    if errors is MISSING or is_unavailable(errors) or not isinstance(totals, dict):
        return cell(None, errors if errors is MISSING or is_unavailable(errors) else MISSING)
    crc = [number_or_none(totals.get(name)) for name in ("crc_flit", "crc_data")]
    counts = [number_or_none(totals.get("replay")), number_or_none(totals.get("recovery")),
              None if all(value is None for value in crc) else sum(value or 0 for value in crc)]
    text = " / ".join("—" if value is None else format_scalar(value) for value in counts)
    erred = any(value for value in counts)
    return Cell(text, "since the driver loaded; health.nvlink_errors says whether they still rise" if erred else "", "warn" if erred else "")


FABRIC_FLAGS = {"completed": "", "in_progress": "warn", "not_started": "bad", "not_supported": ""}


def fabric_cell(fabric: Any) -> Cell:
    """The GPU's NVSwitch fabric registration: its state, the status once completed, its clique."""
    if fabric is MISSING or is_unavailable(fabric) or not isinstance(fabric, dict):
        return cell(None, fabric if fabric is MISSING or is_unavailable(fabric) else MISSING)
    state = str(fabric.get("state"))
    if state == "not_supported":
        return Cell("not supported", str(fabric.get("reason") or ""))
    status = fabric.get("status")
    text = state.replace("_", " ") + (", %s" % status if state == "completed" else "")
    if isinstance(fabric.get("clique_id"), int) and state == "completed":
        text += ", clique %d" % fabric["clique_id"]
    flag = "bad" if state == "completed" and status != "success" else FABRIC_FLAGS.get(state, "warn")
    return Cell(text, "", flag)


def gpu_axis_label(gpu: Any, position: int) -> str:
    """The short label "GPU <index>" of plot axes and tables (its position when the index is missing)."""
    index = dig(gpu, "index")
    return "GPU %s" % (format_scalar(index) if index is not MISSING and not is_unavailable(index) else position)


def power_plot(gpus: List[Any]) -> str:
    draws = [number_or_none(dig(gpu, "power", "draw_w")) for gpu in gpus]
    if not any(value is not None for value in draws):
        return ""
    limits = [[("power limit", number_or_none(dig(gpu, "power", "limit_w")))] for gpu in gpus]
    return bar_chart("Power draw per GPU, its power limit ticked",
                     [gpu_axis_label(gpu, position) for position, gpu in enumerate(gpus)], draws, "W", markers=limits,
                     value_name="power draw", data_note="The numbers: the table 'GPUs' above.")


def temperature_plot(gpus: List[Any]) -> str:
    temperatures = [number_or_none(dig(gpu, "temperature", "gpu_c")) for gpu in gpus]
    if not any(value is not None for value in temperatures):
        return ""
    return bar_chart("Temperature per GPU", [gpu_axis_label(gpu, position) for position, gpu in enumerate(gpus)],
                     temperatures, "°C", value_name="temperature", data_note="The numbers: the table 'GPUs' above.")


def link_flag(link_class: str) -> str:
    if link_class.startswith("NV"):
        return "nvlink"
    return {"PIX": "pcie", "PXB": "pcie", "PHB": "host", "NODE": "host", "SYS": "sys"}.get(link_class, "")


def topology_matrix(topology: Any, gpus: List[Any]) -> Dict[str, Any]:
    """GPU × GPU link classes; a pair given once is shown both ways; the diagonal is "X" as in nvidia-smi topo -m."""
    if is_unavailable(topology):
        return {"reason": "unavailable: " + unavailable_reason(topology), "labels": [], "rows": [], "method": ""}
    pairs = dig(topology, "pairs")
    pairs = pairs if isinstance(pairs, list) else []
    links: Dict[Tuple[str, str], Cell] = {}
    indices: List[str] = [format_scalar(dig(gpu, "index")) for gpu in gpus
                          if dig(gpu, "index") is not MISSING and not is_unavailable(dig(gpu, "index"))]
    for pair in pairs:
        a, b = dig(pair, "gpu_a"), dig(pair, "gpu_b")
        if a is MISSING or b is MISSING:
            continue
        a, b = format_scalar(a), format_scalar(b)
        for index in (a, b):
            if index not in indices:
                indices.append(index)
        link_class = dig(pair, "link_class")
        if is_unavailable(link_class):
            entry = Cell("n/a", unavailable_reason(link_class), "na")
        elif link_class is MISSING:
            entry = Cell("?", "no link class")
        else:
            entry = Cell(format_scalar(link_class), "", link_flag(format_scalar(link_class)))
        links[(a, b)] = entry
        links.setdefault((b, a), entry)
    rows = [[Cell("X") if a == b else links.get((a, b), Cell("—", "not reported")) for b in indices] for a in indices]
    method = dig(topology, "method")
    return {"reason": "" if pairs or len(indices) < 2 else "no GPU pairs reported",
            "labels": indices, "rows": rows, "method": "" if method is MISSING else format_value("method", method)}


def device_node_rows(device_nodes: Any) -> Dict[str, Any]:
    if is_unavailable(device_nodes):
        return {"reason": "unavailable: " + unavailable_reason(device_nodes), "rows": [], "mismatches": []}
    nodes = dig(device_nodes, "nodes")
    rows = []
    for node in nodes if isinstance(nodes, list) else []:
        match = dig(node, "major_matches")
        flag = "bad" if match is False else ""
        rows.append({"cells": [cell("path", dig(node, "path")), cell("major", dig(node, "major")),
                               cell("minor", dig(node, "minor")),
                               cell(*field(node, "drivers_for_major")),
                               cell(*field(node, "expected_majors")),
                               Cell("no: MISMATCH", "", "bad") if match is False else cell("match", match)],
                     "flag": flag})
    mismatches = dig(device_nodes, "mismatches")
    mismatches = [format_value("sentence", dig(item, "sentence")) for item in mismatches
                  if dig(item, "sentence") is not MISSING] if isinstance(mismatches, list) else []
    return {"reason": "" if rows else "no device nodes reported", "rows": rows, "mismatches": mismatches}


def cuda_init_summary(cuda_init: Any) -> Dict[str, Any]:
    if cuda_init is MISSING:
        return {"verdict": "not reported", "flag": "na", "details": []}
    if is_unavailable(cuda_init):
        return {"verdict": "unavailable: " + unavailable_reason(cuda_init), "flag": "na", "details": []}
    ok = dig(cuda_init, "ok")
    if ok is True:
        verdict, flag = "CUDA initialised in a fresh process", ""
    elif ok is False:
        verdict, flag = "CUDA failed to initialise in a fresh process", "bad"
    else:
        verdict, flag = "CUDA init result not reported", "na"
    details = [(name, cell(name, value)) for name, value in cuda_init.items() if name != "ok" and name != "devices"] \
        if isinstance(cuda_init, dict) else []
    return {"verdict": verdict, "flag": flag, "details": details}


def records_table(records: Any, preferred: Sequence[str] = ()) -> Dict[str, Any]:
    """A table of a list of objects: preferred columns first, then any other key seen, in order of appearance."""
    records = [record for record in records if isinstance(record, dict)] if isinstance(records, list) else []
    columns = [name for name in preferred if any(name in record for record in records)]
    for record in records:
        columns.extend(name for name in record if name not in columns)
    rows = [[cell(name, record.get(name, MISSING)) for name in columns] for record in records]
    return {"columns": columns, "rows": rows}


def xid_summary(data: Any) -> Dict[str, Any]:
    """XIDs from the kernel_log section (its xid_events list)."""
    xid_events = dig(data, "kernel_log")
    events = dig(xid_events, "xid_events")
    if xid_events is MISSING:
        return {"reason": "not reported", "source": "", "table": records_table([])}
    if is_unavailable(xid_events):
        return {"reason": "unavailable: " + unavailable_reason(xid_events), "source": "", "table": records_table([])}
    source = dig(xid_events, "source")
    return {"reason": "", "source": "" if source is MISSING else format_value("source", source),
            "table": records_table(events, ("xid", "gpu_index", "pci_bus_id", "time", "hardware", "message"))}


def processes_table(gpus: List[Any]) -> Dict[str, Any]:
    """The compute and graphics processes NVML listed on each GPU."""
    processes = []
    for position, gpu in enumerate(gpus):
        for kind in ("compute", "graphics"):
            listed = dig(gpu, "processes", kind)
            for process in listed if isinstance(listed, list) else []:
                if isinstance(process, dict):
                    processes.append(dict({"gpu": gpu_axis_label(gpu, position), "type": kind}, **process))
    return records_table(processes, ("gpu", "type", "pid", "name", "used_memory_mib"))


def platform_facts(data: Any) -> List[Tuple[str, Cell]]:
    facts = [("driver version", ("software", "driver_version")), ("CUDA driver version", ("software", "cuda_driver_version")),
             ("NVML version", ("software", "nvml_version")), ("kernel module version", ("software", "kernel_module_version")),
             ("hostname", ("platform", "hostname")),
             ("kernel", ("platform", "kernel_release")), ("OS", ("platform", "os_release", "PRETTY_NAME")),
             ("CPU", ("platform", "cpu", "model")),
             ("kernel command line", ("platform", "cmdline"))]
    rows = [(label, cell(path[-1], dig(data, *path))) for label, path in facts]
    numa = dig(data, "platform", "numa_nodes")
    rows.append(("NUMA nodes", cell("numa_nodes", len(numa) if isinstance(numa, list) else numa)))
    return rows


def health_view(data: Any) -> Dict[str, Any]:
    gpus = dig(data, "gpus")
    gpus_reason = "unavailable: " + unavailable_reason(gpus) if is_unavailable(gpus) else ""
    gpus = gpus if isinstance(gpus, list) else []
    errors = dig(data, "errors")
    return {
        "facts": platform_facts(data),
        "gpu_columns": GPU_COLUMNS,
        "gpu_rows": [gpu_row(gpu) for gpu in gpus],
        "gpus_reason": gpus_reason or ("" if gpus else "no GPUs reported"),
        "plots": [plot for plot in (power_plot(gpus), temperature_plot(gpus)) if plot],
        "topology": topology_matrix(dig(data, "topology"), gpus),
        "device_nodes": device_node_rows(dig(data, "device_nodes")),
        "cuda_init": cuda_init_summary(dig(data, "cuda_init")),
        "xid": xid_summary(data),
        "processes": processes_table(gpus),
        "errors": records_table(errors, ("section", "error")),
        # tables of the generic kind (report/cells.py table), rendered in order after the processes
        "tables": [clock_event_table(gpus, "clock_event_durations", "Time in each clock-event reason since the driver loaded "
                                     "(NVML's counters; uptime_s: the host's)", "uptime_s", "warn")],
    }


def fleet_columns(data: Any) -> Dict[str, str]:
    """GPU count and model, driver, CUDA init: the health facts the fleet index shows per host."""
    gpus = dig(data, "gpus")
    if isinstance(gpus, list):
        names = sorted({format_scalar(dig(gpu, "name")) for gpu in gpus if isinstance(dig(gpu, "name"), str)})
        gpu_text = "%d × %s" % (len(gpus), ", ".join(names) or "unknown model") if gpus else "0"
    else:
        gpu_text = cell("gpus", gpus).note or "—"
    driver = cell(*field(data, "software", "driver_version"))
    cuda = cuda_init_summary(dig(data, "cuda_init"))
    cuda_text = {"": "ok", "bad": "failed"}.get(cuda["flag"], cuda["verdict"])
    if cuda["flag"] == "bad":
        why = dig(data, "cuda_init", "reason")
        why = dig(data, "cuda_init", "error") if why is MISSING else why
        cuda_text += ": " + format_value("reason", why) if why not in (MISSING, None, "") else ""
    driver_text = driver.text if not driver.note else driver.note
    if driver.note and driver_text == gpu_text:  # one missing driver explains both: its words once per cell
        driver_text = "unavailable for the same reason"
    return {"gpus": gpu_text, "driver": driver_text, "cuda_init": cuda_text, "cuda_flag": cuda["flag"]}


SECTION = ProbeSection(health_view, "health/templates/section.html.j2", "health/templates/section.md.j2")
