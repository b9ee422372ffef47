"""Compare the health probe's health.json with `nvidia-smi -q -x` (and `nvidia-smi topo -m`) from the same run.

A developer tool: on a GPU machine, save in one go

    nvidia-smi -q -x > smi.xml; nvidia-smi topo -m > topo.txt; python3 probes/health.py --out health.json

then

    python3 tools/compare_health_with_smi.py --health health.json --smi-xml smi.xml [--smi-topo topo.txt]
        [--out compare.md]

prints a Markdown report: one table per GPU (field | health.json | nvidia-smi -q | agree?), a topology table,
and a list of differences with a hint at the likely cause. Readings that move (power, temperature, clocks,
memory in use) are compared within a tolerance, since the two tools sample them at different instants.

Exit status: 0 whenever both inputs could be read, differences or not; 2 when an input is unreadable.
Standard library only (Python 3.9+).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# ----------------------------------------------------------------------------------------------------------------
# Statuses of one compared row. The first three count as agreement.
AGREE = "yes"
AGREE_TOLERANCE = "yes (within tolerance)"
AGREE_BOTH_LACK = "yes (both lack a value)"
SAMPLED = "~ (sampled at a different instant)"
DIFFER = "**no**"
HEALTH_UNAVAILABLE = "unavailable in health.json"
SMI_LACKS = "nvidia-smi lacks a value"
XML_MISSING = "missing in XML"
HEALTH_MISSING = "missing in health.json"
AGREEING = (AGREE, AGREE_TOLERANCE, AGREE_BOTH_LACK)

# What nvidia-smi prints where it has no value (with or without the square brackets).
SMI_NO_VALUE = {"n/a", "not supported", "unknown error", "insufficient permissions", "not available",
                "requested functionality has been deprecated", "not found", "none", ""}

POWER_TOLERANCE_FRACTION = 0.10
POWER_TOLERANCE_W = 15.0
POWER_LIMIT_TOLERANCE_W = 0.5  # nvidia-smi rounds to 0.01 W, NVML reports mW
TEMPERATURE_TOLERANCE_C = 3.0
MEMORY_TOLERANCE_MIB = 64.0

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_NUMBER = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*([A-Za-z%/]*)\s*$")
_GPU_LABEL = re.compile(r"^GPU(\d+)$")


class InputError(Exception):
    """An input file that cannot be read or parsed at all."""


# ----------------------------------------------------------------------------------------------------------------
# health.json side

class _Absent:
    """A health.json value that is not a value: unavailable (with its reason) or missing altogether."""

    def __init__(self, kind: str, reason: str) -> None:
        self.kind = kind  # "unavailable" or "missing"
        self.reason = reason

    def __repr__(self) -> str:
        return "_Absent(%r, %r)" % (self.kind, self.reason)


def is_unavailable(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"unavailable"}


def health_get(root: Any, path: Sequence[Any]) -> Any:
    """The value at ``path``; an _Absent when a step is ``{"unavailable": ...}`` or not there."""
    current = root
    walked: List[str] = []
    for key in path:
        if is_unavailable(current):
            return _Absent("unavailable", str(current["unavailable"]))
        try:
            current = current[key]
        except (KeyError, IndexError, TypeError):
            return _Absent("missing", "%s has no %s" % (".".join(walked) or "the GPU entry", key))
        walked.append(str(key))
    if is_unavailable(current):
        return _Absent("unavailable", str(current["unavailable"]))
    return current


# ----------------------------------------------------------------------------------------------------------------
# nvidia-smi -q -x side

class SmiValue:
    """What nvidia-smi says for one field: found at ``path`` with ``text``, or missing (path None)."""

    def __init__(self, path: Optional[str], text: Optional[str], tried: Sequence[str] = ()) -> None:
        self.path = path
        self.text = text
        self.tried = list(tried)

    @property
    def missing(self) -> bool:
        return self.path is None

    @property
    def lacking(self) -> bool:
        """nvidia-smi printed N/A, [Not Supported], ... instead of a value."""
        return not self.missing and smi_lacks(self.text)


def smi_lacks(text: Optional[str]) -> bool:
    if text is None:
        return True
    stripped = text.strip()
    if stripped.startswith("[") and stripped.endswith("]"):
        stripped = stripped[1:-1].strip()
    return stripped.lower() in SMI_NO_VALUE


def smi_find(element: ET.Element, candidates: Sequence[str]) -> SmiValue:
    """The first of the candidate paths present under ``element``.

    When none is present but an ancestor of one is, and that ancestor reads N/A (nvidia-smi collapses a
    section it cannot fill, e.g. ``<remapped_rows>N/A</remapped_rows>``), that N/A is the answer.
    """
    for path in candidates:
        found = element.find(path)
        if found is not None:
            return SmiValue(path, (found.text or "").strip())
    for path in candidates:
        parts = path.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            ancestor = element.find("/".join(parts[:depth]))
            if ancestor is not None:
                text = (ancestor.text or "").strip()
                if len(ancestor) == 0 and text and smi_lacks(text):
                    return SmiValue("/".join(parts[:depth]), text)
                break
    return SmiValue(None, None, candidates)


def parse_number(text: Optional[str]) -> Optional[float]:
    """'143771 MiB' -> 143771.0, '84.16 W' -> 84.16, '38 C' -> 38.0, '16x' -> 16.0, 'N/A' -> None."""
    if text is None or smi_lacks(text):
        return None
    match = _NUMBER.match(text)
    if not match:
        return None
    return float(match.group(1))


def parse_yes_no(text: Optional[str]) -> Optional[bool]:
    lowered = (text or "").strip().lower()
    if lowered in ("yes", "true", "active", "enabled"):
        return True
    if lowered in ("no", "false", "not active", "disabled"):
        return False
    return None


def parse_hex(text: Any) -> Optional[int]:
    try:
        return int(str(text).strip(), 16)
    except ValueError:
        return None


def normalise_bus_id(text: Any) -> Optional[Tuple[int, int, int, int]]:
    """'00000000:00:06.0' and '0000:00:06.0' -> (0, 0, 6, 0): domain, bus, device, function as integers."""
    if not isinstance(text, str):
        return None
    match = re.match(r"^\s*(?:([0-9a-fA-F]+):)?([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-7])\s*$", text)
    if not match:
        return None
    domain = int(match.group(1), 16) if match.group(1) else 0
    return domain, int(match.group(2), 16), int(match.group(3), 16), int(match.group(4))


def normalise_word(text: Any) -> str:
    """'Exclusive_Process' / 'exclusive process' / 'Enabled' -> 'exclusive_process' / 'enabled'."""
    return re.sub(r"[\s_-]+", "_", str(text).strip().lower())


# ----------------------------------------------------------------------------------------------------------------
# Rows

class Row:
    def __init__(self, field: str, health: str, smi: str, status: str, hint: str = "") -> None:
        self.field = field
        self.health = health
        self.smi = smi
        self.status = status
        self.hint = hint

    @property
    def agrees(self) -> bool:
        return self.status in AGREEING


def show_health(value: Any, unit: str = "") -> str:
    if isinstance(value, _Absent):
        return "%s: %s" % (value.kind, value.reason)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return "%s%s" % (_format_number(value), " " + unit if unit else "")
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def show_smi(smi: SmiValue) -> str:
    if smi.missing:
        return "missing (tried %s)" % ", ".join("`%s`" % path for path in smi.tried)
    return smi.text if smi.text else "(empty)"


def _format_number(value: float) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return ("%.3f" % value).rstrip("0").rstrip(".")


def absent_row(field: str, health: Any, smi: SmiValue, unit: str = "") -> Optional[Row]:
    """The row when either side has no value, else None (then the caller compares the values)."""
    health_shown, smi_shown = show_health(health, unit), show_smi(smi)
    health_absent = isinstance(health, _Absent)
    if smi.missing:
        hint = "no element at any of the candidate paths (another driver's schema?)"
        if health_absent:
            hint += "; health.json has no value either"
        return Row(field, health_shown, smi_shown, XML_MISSING, hint)
    if health_absent and smi.lacking:
        return Row(field, health_shown, smi_shown, AGREE_BOTH_LACK)
    if health_absent:
        status = HEALTH_UNAVAILABLE if health.kind == "unavailable" else HEALTH_MISSING
        hint = ("nvidia-smi has a value where health.json has none: check how the probe reads this field"
                if health.kind == "unavailable" else "health.json has no such key (older probe?)")
        return Row(field, health_shown, smi_shown, status, hint)
    if smi.lacking:
        return Row(field, health_shown, smi_shown, SMI_LACKS,
                   "the probe read a value where nvidia-smi prints %s" % smi.text)
    return None


Comparator = Callable[[Any, SmiValue], Tuple[str, str]]


def compare_text(health: Any, smi: SmiValue) -> Tuple[str, str]:
    return (AGREE, "") if str(health).strip() == (smi.text or "").strip() else (DIFFER, "")


def compare_word(health: Any, smi: SmiValue) -> Tuple[str, str]:
    """Case-, space- and underscore-insensitive ('Enabled' == 'enabled', 'Exclusive_Process')."""
    return (AGREE, "") if normalise_word(health) == normalise_word(smi.text) else (DIFFER, "")


def compare_hex(health: Any, smi: SmiValue) -> Tuple[str, str]:
    a, b = parse_hex(health), parse_hex(smi.text)
    if a is None or b is None:
        return compare_word(health, smi)
    return (AGREE, "") if a == b else (DIFFER, "")


def compare_bus_id(health: Any, smi: SmiValue) -> Tuple[str, str]:
    a, b = normalise_bus_id(health), normalise_bus_id(smi.text)
    if a is None or b is None:
        return DIFFER, "a PCI bus id could not be parsed"
    return (AGREE, "") if a == b else (DIFFER, "")


def compare_bool(health: Any, smi: SmiValue) -> Tuple[str, str]:
    b = parse_yes_no(smi.text)
    if b is None:
        return DIFFER, "nvidia-smi's value is not Yes/No"
    return (AGREE, "") if bool(health) == b else (DIFFER, "")


def compare_exact_number(health: Any, smi: SmiValue) -> Tuple[str, str]:
    b = parse_number(smi.text)
    if b is None or not isinstance(health, (int, float)):
        return DIFFER, "a value is not a number"
    return (AGREE, "") if float(health) == b else (DIFFER, "")


def compare_within(tolerance: Callable[[float, float], float], hint: str,
                   differ_status: str = DIFFER) -> Comparator:
    def compare(health: Any, smi: SmiValue) -> Tuple[str, str]:
        b = parse_number(smi.text)
        if b is None or not isinstance(health, (int, float)):
            return DIFFER, "a value is not a number"
        a = float(health)
        if a == b:
            return AGREE, ""
        allowed = tolerance(a, b)
        if abs(a - b) <= allowed:
            return AGREE_TOLERANCE, ""
        return differ_status, "%s (|difference| %s > tolerance %s)" % (
            hint, _format_number(abs(a - b)), _format_number(allowed))
    return compare


compare_power_draw = compare_within(
    lambda a, b: max(POWER_TOLERANCE_FRACTION * max(abs(a), abs(b)), POWER_TOLERANCE_W),
    "power draw is sampled at a different instant (NVML's power usage vs nvidia-smi's average); more than "
    "10 % or 15 W apart means the load changed between the two samples, or the two read different sensors")
compare_power_limit = compare_within(lambda a, b: POWER_LIMIT_TOLERANCE_W,
                                     "power limits are settings: they should match to the rounding")
compare_temperature = compare_within(
    lambda a, b: TEMPERATURE_TOLERANCE_C,
    "temperature is sampled at a different instant; more than 3 C apart means the GPU heated or cooled "
    "between the samples")
compare_memory = compare_within(
    lambda a, b: MEMORY_TOLERANCE_MIB,
    "memory in use is sampled at a different instant; more than 64 MiB apart means an allocation came or "
    "went between the samples")


def compare_row(field: str, health: Any, smi: SmiValue, comparator: Comparator, unit: str = "",
                hint: str = "") -> Row:
    row = absent_row(field, health, smi, unit)
    if row is not None:
        return row
    status, own_hint = comparator(health, smi)
    if status not in AGREEING and not own_hint:
        own_hint = hint
    return Row(field, show_health(health, unit), show_smi(smi), status, own_hint)


# ----------------------------------------------------------------------------------------------------------------
# Field catalogue: (label = health.json path, health path, XML candidate paths, comparator, unit, hint)

IDENTITY_HINT = "identity and firmware fields are fixed: a difference means the two files describe different GPUs"
STATIC_HINT = "a setting or a fixed property: it should not change between the two samples"

FIELDS: List[Tuple[str, Tuple[Any, ...], Sequence[str], Comparator, str, str]] = [
    ("name", ("name",), ["product_name"], compare_text, "", IDENTITY_HINT),
    ("uuid", ("uuid",), ["uuid"], compare_word, "", IDENTITY_HINT),
    ("serial", ("serial",), ["serial"], compare_text, "", IDENTITY_HINT),
    ("minor_number", ("minor_number",), ["minor_number"], compare_exact_number, "", IDENTITY_HINT),
    ("board_part_number", ("board_part_number",), ["board_part_number"], compare_text, "", IDENTITY_HINT),
    ("vbios_version", ("vbios_version",), ["vbios_version"], compare_word, "", IDENTITY_HINT),
    ("inforom_image_version", ("inforom_image_version",), ["inforom_version/img_version"], compare_text, "",
     IDENTITY_HINT),
    ("gsp_firmware_version", ("gsp_firmware_version",), ["gsp_firmware_version"], compare_text, "", IDENTITY_HINT),
    ("firmware.inforom_objects.oem", ("firmware", "inforom_objects", "oem"), ["inforom_version/oem_object"],
     compare_text, "", IDENTITY_HINT),
    ("firmware.inforom_objects.ecc", ("firmware", "inforom_objects", "ecc"), ["inforom_version/ecc_object"],
     compare_text, "", IDENTITY_HINT),
    ("firmware.inforom_objects.power", ("firmware", "inforom_objects", "power"), ["inforom_version/pwr_object"],
     compare_text, "", IDENTITY_HINT),
    ("pci.bus_id", ("pci", "bus_id"), ["pci/pci_bus_id"], compare_bus_id, "",
     "bus ids are compared as domain:bus:device.function integers"),
    ("pci.device_id", ("pci", "device_id"), ["pci/pci_device_id"], compare_hex, "", IDENTITY_HINT),
    ("pci.subsystem_id", ("pci", "subsystem_id"), ["pci/pci_sub_system_id"], compare_hex, "", IDENTITY_HINT),
    ("pcie.current_link_gen", ("pcie", "current_link_gen"),
     ["pci/pci_gpu_link_info/pcie_gen/current_link_gen"], compare_exact_number, "",
     "the link may train down when idle (power saving) and back up under load: sampled at a different instant?"),
    ("pcie.max_link_gen", ("pcie", "max_link_gen"),
     ["pci/pci_gpu_link_info/pcie_gen/max_link_gen"], compare_exact_number, "", STATIC_HINT),
    ("pcie.gpu_max_link_gen", ("pcie", "gpu_max_link_gen"),
     ["pci/pci_gpu_link_info/pcie_gen/max_device_link_gen"], compare_exact_number, "", STATIC_HINT),
    ("pcie.current_link_width", ("pcie", "current_link_width"),
     ["pci/pci_gpu_link_info/link_widths/current_link_width"], compare_exact_number, "",
     "the link width can change with power management: sampled at a different instant?"),
    ("pcie.max_link_width", ("pcie", "max_link_width"),
     ["pci/pci_gpu_link_info/link_widths/max_link_width"], compare_exact_number, "", STATIC_HINT),
    ("memory.total_mib", ("memory", "total_mib"), ["fb_memory_usage/total"], compare_exact_number, "MiB",
     STATIC_HINT),
    # memory.used_mib is compared by compare_memory_used (nvidia-smi may list driver-reserved memory apart)
    ("memory.free_mib", ("memory", "free_mib"), ["fb_memory_usage/free"], compare_memory, "MiB", ""),
    ("bar1.total_mib", ("bar1", "total_mib"), ["bar1_memory_usage/total"], compare_exact_number, "MiB",
     STATIC_HINT),
    ("bar1.used_mib", ("bar1", "used_mib"), ["bar1_memory_usage/used"], compare_memory, "MiB", ""),
    ("bar1.free_mib", ("bar1", "free_mib"), ["bar1_memory_usage/free"], compare_memory, "MiB", ""),
    ("clocks.max_graphics_mhz", ("clocks", "max_graphics_mhz"), ["max_clocks/graphics_clock"],
     compare_exact_number, "MHz", STATIC_HINT),
    ("clocks.max_sm_mhz", ("clocks", "max_sm_mhz"), ["max_clocks/sm_clock"], compare_exact_number, "MHz",
     STATIC_HINT),
    ("clocks.max_memory_mhz", ("clocks", "max_memory_mhz"), ["max_clocks/mem_clock"], compare_exact_number,
     "MHz", STATIC_HINT),
    ("clocks.applications_graphics_mhz", ("clocks", "applications_graphics_mhz"),
     ["applications_clocks/graphics_clock"], compare_exact_number, "MHz", STATIC_HINT),
    ("clocks.applications_memory_mhz", ("clocks", "applications_memory_mhz"),
     ["applications_clocks/mem_clock"], compare_exact_number, "MHz", STATIC_HINT),
    ("power.draw_w", ("power", "draw_w"),
     ["gpu_power_readings/average_power_draw", "gpu_power_readings/power_draw", "power_readings/power_draw",
      "power_readings/average_power_draw", "gpu_power_readings/instant_power_draw"],
     compare_power_draw, "W", ""),
    ("power.limit_w", ("power", "limit_w"),
     ["gpu_power_readings/requested_power_limit", "power_readings/requested_power_limit",
      "power_readings/power_limit", "gpu_power_readings/power_limit", "gpu_power_readings/current_power_limit",
      "power_readings/current_power_limit"],
     compare_power_limit, "W", ""),
    ("power.enforced_limit_w", ("power", "enforced_limit_w"),
     ["gpu_power_readings/current_power_limit", "gpu_power_readings/enforced_power_limit",
      "power_readings/enforced_power_limit", "power_readings/current_power_limit"],
     compare_power_limit, "W", ""),
    ("power.default_limit_w", ("power", "default_limit_w"),
     ["gpu_power_readings/default_power_limit", "power_readings/default_power_limit"],
     compare_power_limit, "W", ""),
    ("power.min_limit_w", ("power", "min_limit_w"),
     ["gpu_power_readings/min_power_limit", "power_readings/min_power_limit"], compare_power_limit, "W", ""),
    ("power.max_limit_w", ("power", "max_limit_w"),
     ["gpu_power_readings/max_power_limit", "power_readings/max_power_limit"], compare_power_limit, "W", ""),
    ("temperature.gpu_c", ("temperature", "gpu_c"), ["temperature/gpu_temp"], compare_temperature, "C", ""),
    ("fan_speed_percent", ("fan_speed_percent",), ["fan_speed"],
     compare_within(lambda a, b: 5.0, "fan speed is sampled at a different instant", SAMPLED), "%", ""),
    ("ecc.mode_current", ("ecc", "mode_current"), ["ecc_mode/current_ecc"], compare_word, "", STATIC_HINT),
    ("ecc.mode_pending", ("ecc", "mode_pending"), ["ecc_mode/pending_ecc"], compare_word, "", STATIC_HINT),
    ("retired_pages.single_bit_ecc_count", ("retired_pages", "single_bit_ecc_count"),
     ["retired_pages/multiple_single_bit_retirement/retired_count"], compare_exact_number, "",
     "a page retired between the two samples?"),
    ("retired_pages.double_bit_ecc_count", ("retired_pages", "double_bit_ecc_count"),
     ["retired_pages/double_bit_retirement/retired_count"], compare_exact_number, "",
     "a page retired between the two samples?"),
    ("retired_pages.pending", ("retired_pages", "pending"), ["retired_pages/pending_retirement"],
     compare_bool, "", ""),
    ("remapped_rows.correctable_count", ("remapped_rows", "correctable_count"),
     ["remapped_rows/remapped_row_corr", "remapped_rows/remapped_row_correctable"], compare_exact_number, "",
     "a row was remapped between the two samples?"),
    ("remapped_rows.uncorrectable_count", ("remapped_rows", "uncorrectable_count"),
     ["remapped_rows/remapped_row_unc", "remapped_rows/remapped_row_uncorrectable"], compare_exact_number, "",
     "a row was remapped between the two samples?"),
    ("remapped_rows.pending", ("remapped_rows", "pending"), ["remapped_rows/remapped_row_pending"],
     compare_bool, "", ""),
    ("remapped_rows.failure", ("remapped_rows", "failure"), ["remapped_rows/remapped_row_failure"],
     compare_bool, "", ""),
    ("persistence_mode", ("persistence_mode",), ["persistence_mode"], compare_word, "", STATIC_HINT),
    ("compute_mode", ("compute_mode",), ["compute_mode"], compare_word, "", STATIC_HINT),
    ("mig_mode.current", ("mig_mode", "current"), ["mig_mode/current_mig"], compare_word, "", STATIC_HINT),
    ("mig_mode.pending", ("mig_mode", "pending"), ["mig_mode/pending_mig"], compare_word, "", STATIC_HINT),
]

CURRENT_CLOCKS = (
    ("clocks.graphics_mhz", ("clocks", "graphics_mhz"), ["clocks/graphics_clock"]),
    ("clocks.sm_mhz", ("clocks", "sm_mhz"), ["clocks/sm_clock"]),
    ("clocks.memory_mhz", ("clocks", "memory_mhz"), ["clocks/mem_clock"]),
)

# health.json temperature threshold -> nvidia-smi's absolute element, and the T.Limit margin that newer
# drivers print instead (relative to the T.Limit temperature; 0 C is the GPU max operating temperature).
TEMPERATURE_THRESHOLDS = (
    ("temperature.slowdown_threshold_c", "slowdown_threshold_c",
     ["temperature/gpu_temp_slow_threshold"], "temperature/gpu_temp_slow_tlimit_threshold"),
    ("temperature.shutdown_threshold_c", "shutdown_threshold_c",
     ["temperature/gpu_temp_max_threshold", "temperature/gpu_temp_shutdown_threshold"],
     "temperature/gpu_temp_max_tlimit_threshold"),
    ("temperature.gpu_max_threshold_c", "gpu_max_threshold_c",
     ["temperature/gpu_temp_max_gpu_threshold"], "temperature/gpu_temp_max_gpu_tlimit_threshold"),
    ("temperature.memory_max_threshold_c", "memory_max_threshold_c",
     ["temperature/gpu_temp_max_mem_threshold"], "temperature/gpu_temp_max_mem_tlimit_threshold"),
)

# nvidia-smi's clocks-event reason element suffixes whose health.json name differs.
REASON_ALIASES = {"display_clocks_setting": "display_clock_setting"}
REASON_SECTIONS = (("clocks_event_reasons", "clocks_event_reason_"),
                   ("clocks_throttle_reasons", "clocks_throttle_reason_"),
                   ("clocks_events_reasons", "clocks_events_reason_"))


# ----------------------------------------------------------------------------------------------------------------
# Per-GPU comparison

def compare_gpu(gpu: Dict[str, Any], xml_gpu: ET.Element) -> List[Row]:
    rows: List[Row] = []
    for label, path, candidates, comparator, unit, hint in FIELDS:
        rows.append(compare_row(label, health_get(gpu, path), smi_find(xml_gpu, candidates), comparator, unit,
                                hint))
        if label == "memory.total_mib":
            rows.append(compare_memory_used(gpu, xml_gpu))
    rows.extend(compare_current_clocks(gpu, xml_gpu))
    rows.extend(compare_temperature_thresholds(gpu, xml_gpu))
    rows.extend(compare_ecc_counts(gpu, xml_gpu))
    rows.extend(compare_clock_event_reasons(gpu, xml_gpu))
    rows.extend(compare_processes(gpu, xml_gpu))
    return rows


def compare_memory_used(gpu: Dict[str, Any], xml_gpu: ET.Element) -> Row:
    """NVML's v1 memory info counts driver-reserved memory as used; nvidia-smi >= 510 lists it as reserved."""
    label = "memory.used_mib"
    health = health_get(gpu, ("memory", "used_mib"))
    smi = smi_find(xml_gpu, ["fb_memory_usage/used"])
    row = absent_row(label, health, smi, "MiB")
    if row is not None:
        return row
    status, hint = compare_memory(health, smi)
    shown = show_smi(smi)
    if status not in AGREEING:
        reserved = parse_number(smi_find(xml_gpu, ["fb_memory_usage/reserved"]).text)
        used = parse_number(smi.text)
        if reserved is not None and used is not None:
            with_reserved = SmiValue(smi.path, "%s MiB" % _format_number(used + reserved))
            status_reserved, hint_reserved = compare_memory(health, with_reserved)
            shown = "%s (+ %s MiB reserved = %s MiB)" % (shown, _format_number(reserved),
                                                         _format_number(used + reserved))
            if status_reserved in AGREEING:
                return Row(label, show_health(health, "MiB"), shown, AGREE_TOLERANCE,
                           "health.json counts driver-reserved memory as used (NVML v1 memory info); "
                           "nvidia-smi lists it apart as reserved")
            hint = hint_reserved
    return Row(label, show_health(health, "MiB"), shown, status, hint)


def _both_idle(gpu: Dict[str, Any], xml_gpu: ET.Element) -> Optional[bool]:
    """True when both sides report the gpu_idle clocks-event reason, False when one does not, None unknown."""
    names = health_get(gpu, ("clock_event_reasons", "names"))
    smi = smi_find(xml_gpu, ["%s/%sgpu_idle" % (section, prefix) for section, prefix in REASON_SECTIONS])
    smi_idle = parse_yes_no(smi.text) if not smi.missing and not smi.lacking else None
    if isinstance(names, _Absent) or not isinstance(names, list) or smi_idle is None:
        return None
    return "gpu_idle" in names and smi_idle


def compare_current_clocks(gpu: Dict[str, Any], xml_gpu: ET.Element) -> List[Row]:
    idle = _both_idle(gpu, xml_gpu)
    rows = []
    for label, path, candidates in CURRENT_CLOCKS:
        health = health_get(gpu, path)
        smi = smi_find(xml_gpu, candidates)
        row = absent_row(label, health, smi, "MHz")
        if row is None:
            status, hint = compare_exact_number(health, smi)
            if status not in AGREEING:
                if idle:
                    hint = ("both sides report gpu_idle, where the clocks should sit at the same idle value: the "
                            "clock moved between the two samples even though the GPU was idle")
                else:
                    status = SAMPLED
                    hint = ("current clocks follow the load and are sampled at a different instant; they must match "
                            "exactly only when both sides report gpu_idle")
            row = Row(label, show_health(health, "MHz"), show_smi(smi), status, hint)
        rows.append(row)
    return rows


def compare_temperature_thresholds(gpu: Dict[str, Any], xml_gpu: ET.Element) -> List[Row]:
    rows = []
    for label, key, candidates, tlimit_path in TEMPERATURE_THRESHOLDS:
        health = health_get(gpu, ("temperature", key))
        smi = smi_find(xml_gpu, candidates)
        if smi.missing or smi.lacking:
            margin = smi_find(xml_gpu, [tlimit_path])
            if not margin.missing:
                rows.append(_tlimit_row(label, health, margin, xml_gpu))
                continue
        rows.append(compare_row(label, health, smi, compare_exact_number, "C", STATIC_HINT))
    return rows


def _tlimit_row(label: str, health: Any, margin: SmiValue, xml_gpu: ET.Element) -> Row:
    """Newer drivers print T.Limit margins, not absolute thresholds; derive the absolute value to compare.

    gpu_temp_tlimit is how far the GPU is below T.Limit (the max operating temperature), so T.Limit is about
    gpu_temp + gpu_temp_tlimit, and a threshold printed as a margin m lies at T.Limit - m.
    """
    health_shown = show_health(health, "C")
    smi_shown = "T.Limit margin %s (`%s`)" % (margin.text, margin.path)
    if margin.lacking:
        if isinstance(health, _Absent):
            return Row(label, health_shown, smi_shown, AGREE_BOTH_LACK)
        return Row(label, health_shown, smi_shown, SMI_LACKS,
                   "this driver prints T.Limit margins only, and this one is N/A")
    current = parse_number(smi_find(xml_gpu, ["temperature/gpu_temp"]).text)
    to_limit = parse_number(smi_find(xml_gpu, ["temperature/gpu_temp_tlimit"]).text)
    offset = parse_number(margin.text)
    if current is None or to_limit is None or offset is None:
        status = HEALTH_UNAVAILABLE if isinstance(health, _Absent) else XML_MISSING
        return Row(label, health_shown, smi_shown, status,
                   "this driver prints only T.Limit margins (relative), and gpu_temp / gpu_temp_tlimit are not "
                   "there to turn them into an absolute temperature")
    derived = current + to_limit - offset
    smi_shown += " = about %s C (gpu_temp + gpu_temp_tlimit - margin)" % _format_number(derived)
    if isinstance(health, _Absent):
        return Row(label, health_shown, smi_shown, HEALTH_UNAVAILABLE,
                   "nvidia-smi has a (relative) value where the probe has none")
    if not isinstance(health, (int, float)):
        return Row(label, health_shown, smi_shown, DIFFER, "health.json's value is not a number")
    if abs(float(health) - derived) <= TEMPERATURE_TOLERANCE_C:
        return Row(label, health_shown, smi_shown, AGREE_TOLERANCE,
                   "derived from nvidia-smi's T.Limit margins, which use gpu_temp sampled at another instant")
    return Row(label, health_shown, smi_shown, DIFFER,
               "nvidia-smi prints this threshold only as a T.Limit margin; the absolute value derived from it "
               "is more than 3 C from NVML's (the margin may be defined against another limit on this GPU: "
               "compare by hand)")


def _ecc_totals(counter: ET.Element) -> Tuple[Optional[int], Optional[int], Tuple[str, str]]:
    """(corrected, uncorrected, (how, how)) summed from one <volatile>/<aggregate> element of either schema."""
    children = {child.tag: (child.text or "").strip() for child in counter}
    if any(tag.startswith(("sram_", "dram_")) for tag in children):
        corrected_tags = [t for t in children if t.endswith("correctable") and "uncorrectable" not in t]
        uncorrected_tags = [t for t in children if "uncorrectable" in t]
        how = ("sum of %s" % " + ".join(sorted(corrected_tags)), "sum of %s" % " + ".join(sorted(uncorrected_tags)))
        return _sum_counts(children, corrected_tags), _sum_counts(children, uncorrected_tags), how
    single, double = counter.find("single_bit/total"), counter.find("double_bit/total")
    if single is not None or double is not None:
        return (_sum_counts({"t": (single.text or "")}, ["t"]) if single is not None else None,
                _sum_counts({"t": (double.text or "")}, ["t"]) if double is not None else None,
                ("single_bit/total", "double_bit/total"))
    return None, None, ("no known counters", "no known counters")


def _sum_counts(children: Dict[str, str], tags: Sequence[str]) -> Optional[int]:
    values = [parse_number(children[tag]) for tag in tags]
    if not values or any(value is None for value in values):
        return None
    return int(sum(values))  # type: ignore[arg-type]


def compare_ecc_counts(gpu: Dict[str, Any], xml_gpu: ET.Element) -> List[Row]:
    rows = []
    for counter in ("volatile", "aggregate"):
        element = xml_gpu.find("ecc_errors/%s" % counter)
        if element is None:
            section = xml_gpu.find("ecc_errors")
            text = (section.text or "").strip() if section is not None else None
            corrected = uncorrected = None
            how = ("ecc_errors/%s" % counter,) * 2
            found = section is not None and smi_lacks(text)
        else:
            corrected, uncorrected, how = _ecc_totals(element)
            found = True
        for kind, total, described in (("corrected", corrected, how[0]), ("uncorrected", uncorrected, how[1])):
            label = "ecc.%s_%s_count" % (counter, kind)
            health = health_get(gpu, ("ecc", "%s_%s_count" % (counter, kind)))
            if not found:
                smi = SmiValue(None, None, ["ecc_errors/%s/*" % counter])
            elif total is None:
                smi = SmiValue("ecc_errors/%s" % counter, "N/A")
            else:
                smi = SmiValue("ecc_errors/%s" % counter, str(total))
            row = compare_row(label, health, smi, compare_exact_number, "",
                              "an ECC error was counted between the two samples?")
            if not smi.missing and not smi.lacking:
                row.smi = "%s (%s)" % (row.smi, described)
            rows.append(row)
    return rows


def compare_clock_event_reasons(gpu: Dict[str, Any], xml_gpu: ET.Element) -> List[Row]:
    names = health_get(gpu, ("clock_event_reasons", "names"))
    for section, prefix in REASON_SECTIONS:
        element = xml_gpu.find(section)
        if element is not None:
            break
    else:
        return [Row("clock_event_reasons", show_health(names), "missing (tried %s)" % ", ".join(
            "`%s`" % section for section, unused_prefix in REASON_SECTIONS), XML_MISSING,
            "no clocks-event reasons section in the XML")]
    rows = []
    for child in element:
        if not child.tag.startswith(prefix):
            continue
        reason = child.tag[len(prefix):]
        name = REASON_ALIASES.get(reason, reason)
        label = "clock_event_reasons: %s" % name
        smi = SmiValue("%s/%s" % (section, child.tag), (child.text or "").strip())
        if isinstance(names, _Absent) or not isinstance(names, list):
            absent = names if isinstance(names, _Absent) else _Absent("missing", "names is not a list")
            rows.append(absent_row(label, absent, smi) or Row(label, show_health(absent), show_smi(smi),
                                                              HEALTH_UNAVAILABLE))
            continue
        active = name in names
        health_shown = "active" if active else "not active"
        row = absent_row(label, active, smi)
        if row is None:
            smi_active = parse_yes_no(smi.text)
            if smi_active is None:
                row = Row(label, health_shown, show_smi(smi), DIFFER, "nvidia-smi's value is not Active/Not Active")
            elif smi_active == active:
                row = Row(label, health_shown, show_smi(smi), AGREE)
            else:
                row = Row(label, health_shown, show_smi(smi), DIFFER,
                          "clocks-event reasons are sampled at a different instant: gpu_idle, sw_power_cap and "
                          "sync_boost come and go with the load; a slowdown seen by one side only is worth a "
                          "second run")
        rows.append(row)
    return rows


def compare_processes(gpu: Dict[str, Any], xml_gpu: ET.Element) -> List[Row]:
    element = xml_gpu.find("processes")
    smi_pids: Dict[str, List[int]] = {"compute": [], "graphics": []}
    if element is not None:
        for info in element.findall("process_info"):
            pid = parse_number((info.findtext("pid") or "").strip())
            kind = (info.findtext("type") or "").strip().upper()
            if pid is None:
                continue
            if "C" in kind or not kind:
                smi_pids["compute"].append(int(pid))
            if "G" in kind:
                smi_pids["graphics"].append(int(pid))
    rows = []
    for kind in ("compute", "graphics"):
        label = "processes.%s (pids)" % kind
        health = health_get(gpu, ("processes", kind))
        if element is None:
            smi = SmiValue(None, None, ["processes"])
        elif smi_lacks((element.text or "").strip()) and len(element) == 0 and (element.text or "").strip():
            smi = SmiValue("processes", (element.text or "").strip())
        else:
            smi = SmiValue("processes/process_info", _show_pids(smi_pids[kind]))
        if isinstance(health, list):
            health_pids = sorted(int(entry["pid"]) for entry in health if isinstance(entry, dict) and "pid" in entry)
            health_value: Any = _show_pids(health_pids)
        else:
            health_pids, health_value = [], health
        row = absent_row(label, health_value, smi)
        if row is None:
            same = sorted(smi_pids[kind]) == health_pids
            row = Row(label, health_value, show_smi(smi), AGREE if same else DIFFER,
                      "" if same else "processes started or exited between the two samples? (in a container, "
                      "nvidia-smi and NVML may also see different PID namespaces)")
        rows.append(row)
    return rows


def _show_pids(pids: Sequence[int]) -> str:
    return ", ".join(str(pid) for pid in sorted(pids)) if pids else "(no processes)"


# ----------------------------------------------------------------------------------------------------------------
# System-wide fields, GPU matching, topology

def compare_system(data: Dict[str, Any], root: ET.Element) -> List[Row]:
    rows = [
        compare_row("software.driver_version", health_get(data, ("software", "driver_version")),
                    smi_find(root, ["driver_version"]), compare_text, "",
                    "the two files come from different driver installs (or runs on different hosts)"),
        compare_row("software.cuda_driver_version", health_get(data, ("software", "cuda_driver_version")),
                    smi_find(root, ["cuda_version"]), compare_word, "",
                    "the CUDA version the driver supports: from different driver installs?"),
    ]
    gpus = data.get("gpus")
    count: Any = len(gpus) if isinstance(gpus, list) else health_get(data, ("gpus",))
    row = compare_row("GPU count (len(gpus))", count, smi_find(root, ["attached_gpus"]), compare_exact_number,
                      "", "a GPU fell off the bus, or CUDA_VISIBLE_DEVICES/a container limits what one side sees")
    rows.append(row)
    return rows


def match_gpus(gpus: List[Any], xml_gpus: List[ET.Element]) -> List[Tuple[Optional[Dict[str, Any]],
                                                                          Optional[ET.Element], str]]:
    """Pair health.json GPUs with XML <gpu> elements: by UUID, then PCI bus id, then position."""
    pairs: List[Tuple[Optional[Dict[str, Any]], Optional[ET.Element], str]] = []
    left = [gpu for gpu in gpus if isinstance(gpu, dict)]
    remaining = list(xml_gpus)

    def take(key: Callable[[Dict[str, Any]], Any], xml_key: Callable[[ET.Element], Any], how: str) -> None:
        for gpu in list(left):
            wanted = key(gpu)
            if wanted is None:
                continue
            for xml_gpu in remaining:
                if xml_key(xml_gpu) == wanted:
                    pairs.append((gpu, xml_gpu, how))
                    left.remove(gpu)
                    remaining.remove(xml_gpu)
                    break

    take(lambda g: g["uuid"].strip().lower() if isinstance(g.get("uuid"), str) else None,
         lambda x: (x.findtext("uuid") or "").strip().lower(), "uuid")
    take(lambda g: normalise_bus_id(g.get("pci", {}).get("bus_id") if isinstance(g.get("pci"), dict) else None),
         lambda x: normalise_bus_id(x.findtext("pci/pci_bus_id") or x.get("id")), "PCI bus id")
    while left and remaining:
        pairs.append((left.pop(0), remaining.pop(0), "position (neither uuid nor bus id matched)"))
    pairs.extend((gpu, None, "only in health.json") for gpu in left)
    pairs.extend((None, xml_gpu, "only in nvidia-smi") for xml_gpu in remaining)
    pairs.sort(key=lambda p: (p[0].get("index", 1 << 30) if isinstance(p[0], dict)
                              and isinstance(p[0].get("index"), int) else 1 << 30))
    return pairs


def parse_topo_matrix(text: str) -> Dict[str, Any]:
    """`nvidia-smi topo -m` -> {"gpus": {index: {"cpu_affinity", "numa_affinity", ...}}, "pairs": {(a, b): label}}."""
    lines = [_ANSI.sub("", line).rstrip("\r\n") for line in text.splitlines()]
    header_index = next((i for i, line in enumerate(lines) if "GPU0" in line.split()), None)
    if header_index is None:
        raise ValueError("no header row with a GPU0 column")

    def cells_of(line: str) -> List[str]:
        if "\t" in line:
            return [cell.strip() for cell in line.split("\t")]
        # Tabs turned into spaces (copied from a terminal): split on blanks, re-join the multi-word headers.
        joined = re.sub(r"(CPU|NUMA|GPU NUMA) (Affinity|ID)", lambda m: m.group(0).replace(" ", "\0"), line)
        cells = [cell.replace("\0", " ") for cell in joined.split()]
        return ([""] + cells) if line[:1].isspace() else cells

    header = cells_of(lines[header_index])
    columns = header[1:] if header and header[0] == "" else header
    gpus: Dict[int, Dict[str, str]] = {}
    labels: Dict[Tuple[int, int], str] = {}
    for line in lines[header_index + 1:]:
        if not line.strip():
            break
        cells = cells_of(line)
        row = _GPU_LABEL.match(cells[0]) if cells else None
        if not row:
            continue
        index = int(row.group(1))
        entry: Dict[str, str] = {}
        for column, value in zip(columns, cells[1:]):
            column_gpu = _GPU_LABEL.match(column)
            if column_gpu:
                other = int(column_gpu.group(1))
                if other != index and value and value != "X":
                    labels.setdefault((min(index, other), max(index, other)), value)
            elif column in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"):
                entry[column] = value
        gpus[index] = entry
    if not gpus:
        raise ValueError("no GPU rows under the header")
    return {"gpus": gpus, "pairs": labels}


def compare_topology(data: Dict[str, Any], topo_text: Optional[str]) -> Tuple[List[Row], List[str]]:
    notes: List[str] = []
    if topo_text is None:
        return [], ["`--smi-topo` not given: topology not compared."]
    try:
        matrix = parse_topo_matrix(topo_text)
    except ValueError as exc:
        return [], ["`nvidia-smi topo -m` output could not be parsed: %s." % exc]
    rows: List[Row] = []
    topology = health_get(data, ("topology",))
    health_pairs: Dict[Tuple[int, int], Any] = {}
    if isinstance(topology, _Absent):
        notes.append("health.json topology: %s: %s" % (topology.kind, topology.reason))
    else:
        notes.append("health.json topology method: %s" % show_health(health_get(topology, ("method",))))
        for pair in topology.get("pairs", []) if isinstance(topology, dict) else []:
            try:
                key = (min(pair["gpu_a"], pair["gpu_b"]), max(pair["gpu_a"], pair["gpu_b"]))
            except (KeyError, TypeError):
                continue
            health_pairs[key] = health_get(pair, ("link_class",))
    absent = _Absent("missing", "no such pair in topology.pairs")
    for key in sorted(set(health_pairs) | set(matrix["pairs"])):
        label = "GPU%d-GPU%d link_class" % key
        health = health_pairs.get(key, absent) if not isinstance(topology, _Absent) else topology
        smi = (SmiValue("topo -m", matrix["pairs"][key]) if key in matrix["pairs"]
               else SmiValue(None, None, ["GPU%d row, GPU%d column" % key]))
        rows.append(compare_row(label, health, smi, compare_text, "",
                                "NVLink count or PCIe path differs: NVLinks down/degraded when fewer, or the "
                                "probe classified the PCIe path differently (PHB/NODE/SYS come from the common "
                                "ancestor)"))
    gpus = data.get("gpus") if isinstance(data.get("gpus"), list) else []
    by_index = {gpu.get("index"): gpu for gpu in gpus if isinstance(gpu, dict)}
    for index in sorted(matrix["gpus"]):
        entry = matrix["gpus"][index]
        gpu = by_index.get(index, {})
        if "CPU Affinity" in entry:
            rows.append(compare_row("GPU%d CPU affinity (numa.local_cpulist)" % index,
                                    health_get(gpu, ("numa", "local_cpulist")),
                                    SmiValue("topo -m", entry["CPU Affinity"]), compare_text, "",
                                    "both read the GPU's local CPU list; a container's cpuset may narrow one"))
        if "NUMA Affinity" in entry:
            node = health_get(gpu, ("numa", "sysfs_numa_node"))
            if node == -1:
                node = _Absent("unavailable", "sysfs numa_node is -1 (no NUMA affinity)")
            rows.append(compare_row("GPU%d NUMA affinity (numa.sysfs_numa_node)" % index, node,
                                    SmiValue("topo -m", entry["NUMA Affinity"]), compare_exact_number, "",
                                    "both read the GPU's NUMA node"))
    return rows, notes


# ----------------------------------------------------------------------------------------------------------------
# Report

def md_cell(text: Any) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("\r", " ")


def md_table(rows: List[Row], columns: Sequence[str]) -> List[str]:
    lines = ["| %s |" % " | ".join(columns), "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| %s |" % " | ".join(md_cell(cell) for cell in (
            "`%s`" % row.field, row.health, row.smi, row.status)))
    return lines


def gpu_title(gpu: Optional[Dict[str, Any]], xml_gpu: Optional[ET.Element], how: str) -> str:
    if gpu is not None:
        name = "GPU %s" % gpu.get("index", "?")
        uuid = gpu.get("uuid") if isinstance(gpu.get("uuid"), str) else None
    else:
        name = "GPU (nvidia-smi only)"
        uuid = None
    if uuid is None and xml_gpu is not None:
        uuid = xml_gpu.findtext("uuid")
    bus = xml_gpu.get("id") if xml_gpu is not None else None
    details = ", ".join(part for part in (uuid, ("nvidia-smi id %s" % bus) if bus else None) if part)
    return "%s (%s) — matched by %s" % (name, details, how) if details else "%s — matched by %s" % (name, how)


def build_report(envelope: Dict[str, Any], root: ET.Element, topo_text: Optional[str],
                 names: Dict[str, str]) -> Tuple[str, List[Tuple[str, Row]]]:
    """The Markdown report and the (section, row) list of every row that does not agree."""
    data = envelope.get("data") if isinstance(envelope.get("data"), dict) else (
        envelope if "gpus" in envelope else {})
    sections: List[Tuple[str, List[Row], List[str]]] = []
    sections.append(("System", compare_system(data, root), []))
    gpus = data.get("gpus") if isinstance(data.get("gpus"), list) else []
    for gpu, xml_gpu, how in match_gpus(gpus, root.findall("gpu")):
        title = gpu_title(gpu, xml_gpu, how)
        if gpu is None or xml_gpu is None:
            side = "health.json" if xml_gpu is None else "nvidia-smi"
            sections.append((title, [], ["This GPU is only in %s: nothing to compare." % side]))
            continue
        if "error" in gpu and "uuid" not in gpu:
            sections.append((title, [], ["health.json has no data for it: %s" % gpu.get("error")]))
            continue
        sections.append((title, compare_gpu(gpu, xml_gpu), []))
    topo_rows, topo_notes = compare_topology(data, topo_text)
    sections.append(("Topology", topo_rows, topo_notes))

    all_rows = [(title, row) for title, rows, unused_notes in sections for row in rows]
    differences = [(title, row) for title, row in all_rows if not row.agrees]
    counts: Dict[str, int] = {}
    for unused_title, row in all_rows:
        counts[row.status] = counts.get(row.status, 0) + 1

    lines = ["# health.json vs nvidia-smi", ""]
    lines.append("- health.json: `%s` (host %s, started %s, status %s)" % (
        names["health"], envelope.get("host", "?"), envelope.get("started", "?"), envelope.get("status", "?")))
    lines.append("- nvidia-smi -q -x: `%s` (timestamp %s, driver %s)" % (
        names["xml"], (root.findtext("timestamp") or "?").strip(), (root.findtext("driver_version") or "?").strip()))
    lines.append("- nvidia-smi topo -m: %s" % ("`%s`" % names["topo"] if names.get("topo") else "not given"))
    lines.append("")
    agreeing = sum(count for status, count in counts.items() if status in AGREEING)
    lines.append("**%d fields compared: %d agree, %d do not** (%s)." % (
        len(all_rows), agreeing, len(all_rows) - agreeing,
        ", ".join("%s: %d" % (status.replace("**", ""), count) for status, count in sorted(counts.items()))))
    lines.append("")
    lines.append("Tolerances: power draw within 10 %% or %s W; temperature within %s C; memory in use within %s MiB; "
                 "current clocks exactly when both report gpu_idle, else sampled at a different instant." % (
                     _format_number(POWER_TOLERANCE_W), _format_number(TEMPERATURE_TOLERANCE_C),
                     _format_number(MEMORY_TOLERANCE_MIB)))
    for title, rows, notes in sections:
        lines.extend(["", "## %s" % title, ""])
        for note in notes:
            lines.append("- %s" % note)
        if notes and rows:
            lines.append("")
        if rows:
            third = "nvidia-smi topo -m" if title == "Topology" else "nvidia-smi -q"
            lines.extend(md_table(rows, ("field", "health.json", third, "agree?")))
    lines.extend(["", "## Differences", ""])
    if not differences:
        lines.append("None: every compared field agrees.")
    for title, row in differences:
        lines.append("- **%s** `%s`: health.json %s; nvidia-smi %s — %s%s" % (
            title.split(" — ")[0].split(" (")[0], row.field, md_cell(row.health), md_cell(row.smi),
            row.status.replace("**", ""), (". Hint: %s" % row.hint) if row.hint else ""))
    lines.extend(["", "Not compared (nvidia-smi -q does not report them): nvlink links, NUMA node ids from NVML, "
                  "P2P status, cgroup/device nodes, CUDA init.", ""])
    return "\n".join(lines), differences


# ----------------------------------------------------------------------------------------------------------------
# Inputs and command line

def load_health(path: str) -> Dict[str, Any]:
    try:
        with open(path, "r", encoding="utf-8") as handle:
            envelope = json.load(handle)
    except (OSError, ValueError) as exc:
        raise InputError("cannot read health.json %s: %s" % (path, exc))
    if not isinstance(envelope, dict):
        raise InputError("health.json %s is not a JSON object" % path)
    return envelope


def load_smi_xml(path: str) -> ET.Element:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise InputError("cannot read nvidia-smi XML %s: %s" % (path, exc))
    return parse_smi_xml(raw, path)


def parse_smi_xml(raw: Any, name: str = "<xml>") -> ET.Element:
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    # nvidia-smi names a DTD that is not at hand; ElementTree does not fetch it, but drop it to be safe.
    raw = re.sub(rb"<!DOCTYPE[^>]*>", b"", raw, count=1)
    try:
        root = ET.fromstring(raw)
    except ET.ParseError as exc:
        raise InputError("cannot parse nvidia-smi XML %s: %s" % (name, exc))
    if root.tag != "nvidia_smi_log":
        raise InputError("%s is not `nvidia-smi -q -x` output (root element <%s>, not <nvidia_smi_log>)"
                         % (name, root.tag))
    return root


def load_topo(path: Optional[str]) -> Optional[str]:
    if path is None:
        return None
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError as exc:
        raise InputError("cannot read nvidia-smi topo -m output %s: %s" % (path, exc))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Compare health.json from the health probe with `nvidia-smi -q -x` (and `nvidia-smi topo -m`) "
                    "saved in the same run; print a Markdown report. Exits 0 even when fields differ.")
    parser.add_argument("--health", required=True, metavar="FILE", help="the health probe's health.json envelope")
    parser.add_argument("--smi-xml", required=True, metavar="FILE", help="output of `nvidia-smi -q -x`")
    parser.add_argument("--smi-topo", metavar="FILE", help="output of `nvidia-smi topo -m` (optional)")
    parser.add_argument("--out", metavar="FILE", help="write the Markdown report here (default: standard output)")
    args = parser.parse_args(argv)
    try:
        envelope = load_health(args.health)
        root = load_smi_xml(args.smi_xml)
        topo = load_topo(args.smi_topo)
    except InputError as exc:
        print("compare_health_with_smi: %s" % exc, file=sys.stderr)
        return 2
    report, differences = build_report(envelope, root, topo,
                                       {"health": args.health, "xml": args.smi_xml, "topo": args.smi_topo or ""})
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as handle:
                handle.write(report)
        except OSError as exc:
            print("compare_health_with_smi: cannot write %s: %s" % (args.out, exc), file=sys.stderr)
            return 2
        print("wrote %s (%d difference(s))" % (args.out, len(differences)), file=sys.stderr)
    else:
        sys.stdout.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
