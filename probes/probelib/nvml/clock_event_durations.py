"""Throttle history: how long NVML's clock-event reasons have held each GPU's clocks down, in nanoseconds, and the
difference of two such reads over a window.

Two NVML sources, each number recorded with the one it came from:
- field values (nvmlDeviceGetFieldValues) NVML_FI_DEV_CLOCKS_EVENT_REASON_*: time in each reason since the driver loaded;
- nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_*): violationTime (ns) per perf policy, with NVML's referenceTime (a CPU
  timestamp in microseconds).
The field ids and policy numbers are spelled out (nvml.h values) rather than taken from pynvml: older nvidia-ml-py
releases lack the names, while the driver decides whether it offers the counter. NVML has no duration counter for the
plain hw_slowdown reason (only the current bitmask has it): it is recorded as unavailable with that reason.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Optional, Tuple

from probelib.fields import is_unavailable, read_field, unavailable
from probelib.nvml.access import NVML_SUCCESS, NvmlReader, describe_nvml_error, failure_reason

NS_PER_S = 1e9
# nvml.h field ids: (reason, field name, id). SW_POWER_CAP and SYNC_BOOST are the PERF_POLICY_POWER / _SYNC_BOOST fields.
REASON_FIELDS = (
    ("sw_power_cap", "NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP", 74),
    ("sync_boost", "NVML_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST", 76),
    ("sw_thermal_slowdown", "NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN", 269),
    ("hw_thermal_slowdown", "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN", 270),
    ("hw_power_brake_slowdown", "NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN", 271),
)
# nvmlPerfPolicyType_t's members in their order (values 0 to 5), each NVML_PERF_POLICY_ and the policy in capitals.
POLICIES = ("power", "thermal", "sync_boost", "board_limit", "low_utilization", "reliability")
# (policy, name, value).
VIOLATION_POLICIES = tuple((policy, "NVML_PERF_POLICY_" + policy.upper(), value) for value, policy in enumerate(POLICIES))
# A reason whose field the driver does not offer falls back to the violation policy that counts the same time.
REASON_FALLBACK_POLICY = {"sw_power_cap": "power", "sync_boost": "sync_boost"}
NO_HW_SLOWDOWN_COUNTER = ("NVML has no duration counter for hw_slowdown (only the current reasons bitmask shows it); its "
                          "thermal and power-brake parts are hw_thermal_slowdown and hw_power_brake_slowdown")
REASONS = tuple(reason for reason, unused_name, unused_id in REASON_FIELDS) + ("hw_slowdown",)
# nvmlValueType_t -> the c_nvmlValue_t member holding it.
VALUE_MEMBERS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}


class ReturnCode(Exception):
    """One field's nvmlReturn, shaped like an NVMLError so that access.describe_nvml_error words it."""

    def __init__(self, value: int) -> None:
        super().__init__("return code %d" % value)
        self.value = value


def duration(ns: int, source: str) -> Dict[str, Any]:
    return {"ns": int(ns), "s": round(ns / NS_PER_S, 3), "source": source}


def field_value_number(entry: Any) -> Tuple[Optional[int], str]:
    """(the counter in ns, '') or (None, why) for one c_nvmlFieldValue_t."""
    code = int(getattr(entry, "nvmlReturn", NVML_SUCCESS))
    if code != NVML_SUCCESS:
        return None, describe_nvml_error(ReturnCode(code))
    member = VALUE_MEMBERS.get(int(getattr(entry, "valueType", 3)))
    if member is None:
        return None, "NVML gave the value type %r, which this probe does not know" % getattr(entry, "valueType", None)
    value = getattr(entry.value, member)
    if isinstance(value, float) or value < 0:
        return None, "NVML gave %r, not a count of nanoseconds" % value
    return int(value), ""


def read_reason_fields(reader: NvmlReader, handle: Any) -> Dict[str, Any]:
    """{reason: duration or unavailable} from one nvmlDeviceGetFieldValues call."""
    ok, entries = reader.attempt("nvmlDeviceGetFieldValues", handle, [field_id for unused, unused_name, field_id in REASON_FIELDS])
    found: Dict[str, Any] = {}
    for position, (reason, name, field_id) in enumerate(REASON_FIELDS):
        source = "nvmlDeviceGetFieldValues %s (%d)" % (name, field_id)
        if not ok:
            found[reason] = unavailable("%s: %s" % (source, failure_reason(entries)))
            continue
        try:
            value, why = field_value_number(entries[position])
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            value, why = None, "the field value could not be read: %s: %s" % (type(exc).__name__, exc)
        found[reason] = duration(value, source) if value is not None else unavailable("%s: %s" % (source, why))
    return found


def read_violation_status(reader: NvmlReader, handle: Any) -> Dict[str, Any]:
    """{policy: {ns, s, source, reference_timestamp} or unavailable} from nvmlDeviceGetViolationStatus."""
    found: Dict[str, Any] = {}
    for policy, name, value in VIOLATION_POLICIES:
        source = "nvmlDeviceGetViolationStatus %s (%d)" % (name, value)
        ok, status = reader.attempt("nvmlDeviceGetViolationStatus", handle, value)
        if not ok:
            found[policy] = unavailable("%s: %s" % (source, failure_reason(status)))
            continue
        try:
            entry = duration(int(status.violationTime), source)
            entry["reference_timestamp"] = int(status.referenceTime)
        except (AttributeError, TypeError, ValueError) as exc:
            entry = unavailable("%s returned %r: %s" % (source, status, exc))
        found[policy] = entry
    return found


def read_counters(reader: NvmlReader, handle: Any) -> Dict[str, Any]:
    """{"reasons": {reason: duration or unavailable}, "violation_status": {policy: ...}}: both sources, each number with
    the one it came from."""
    reasons = read_reason_fields(reader, handle)
    violations = read_violation_status(reader, handle)
    for reason, policy in REASON_FALLBACK_POLICY.items():
        if is_unavailable(reasons[reason]) and not is_unavailable(violations[policy]):
            fallback = dict(violations[policy])
            fallback.pop("reference_timestamp", None)
            fallback["source"] += " (the field: %s)" % reasons[reason]["unavailable"]
            reasons[reason] = fallback
    reasons["hw_slowdown"] = unavailable(NO_HW_SLOWDOWN_COUNTER)
    return {"reasons": reasons, "violation_status": violations}


def host_uptime_s(proc_root: str = "/proc") -> Any:
    """/proc/uptime's first number: the driver loaded at or after boot, so a share of it is a lower bound."""
    path = os.path.join(proc_root, "uptime")
    try:
        with open(path, "r", encoding="ascii") as handle:
            return round(float(handle.read().split()[0]), 3)
    except (OSError, ValueError, IndexError) as exc:
        return unavailable("%s could not be read: %s" % (path, exc))


def since_driver_load(reader: NvmlReader, handle: Any, proc_root: str = "/proc") -> Dict[str, Any]:
    """The health probe's gpus[i].clock_event_durations."""
    counters = read_counters(reader, handle)
    return {"since": "driver_load", "uptime_s": host_uptime_s(proc_root), "reasons": counters["reasons"],
            "violation_status": counters["violation_status"]}


def _difference(first: Any, last: Any, window_s: float) -> Any:
    if is_unavailable(first) or is_unavailable(last):
        return first if is_unavailable(first) else last
    if first["source"] != last["source"]:
        return unavailable("the start read came from %s and the end read from %s: not comparable" % (first["source"], last["source"]))
    if last["ns"] < first["ns"]:
        return unavailable("the counter went down from %d ns to %d ns during the window (wrapped, or the driver was reloaded): "
                           "no difference to give" % (first["ns"], last["ns"]))
    entry = duration(last["ns"] - first["ns"], first["source"])
    entry["share_pct"] = round(100.0 * entry["s"] / window_s, 3) if window_s > 0 else unavailable("the window has no length")
    return entry


def window_deltas(start: Dict[str, Any], end: Dict[str, Any], window_s: float) -> Dict[str, Any]:
    """The load probe's gpus[i].clock_event_durations_window: the counters' growth between two read_counters results
    ``window_s`` apart, each with its share of the window."""
    return {"window_s": round(window_s, 3),
            "reasons": {reason: _difference(start["reasons"][reason], end["reasons"][reason], window_s) for reason in REASONS},
            "violation_status": {policy: _difference(start["violation_status"][policy], end["violation_status"][policy], window_s)
                                 for policy in POLICIES}}


class WindowCounters:
    """The counters of several GPUs read at the start and the end of a window; ``deltas()`` gives each GPU's growth."""

    def __init__(self, reads: Dict[str, Tuple[NvmlReader, Any]], clock: Callable[[], float]) -> None:
        self.reads = reads
        self.clock = clock
        self.started: Dict[str, Tuple[float, Any]] = {}
        self.ended: Dict[str, Tuple[float, Any]] = {}

    def _read_all(self, into: Dict[str, Tuple[float, Any]]) -> None:
        for key, (reader, handle) in self.reads.items():
            into[key] = (self.clock(), read_field(lambda: read_counters(reader, handle), "the clock-event duration counters"))

    def start(self) -> None:
        self._read_all(self.started)

    def end(self) -> None:
        self._read_all(self.ended)

    def deltas(self, key: str) -> Any:
        if key not in self.started or key not in self.ended:
            return unavailable("the counters were not read at both ends of the load window")
        (began, first), (ended, last) = self.started[key], self.ended[key]
        for read in (first, last):
            if is_unavailable(read):
                return read
        return window_deltas(first, last, ended - began)
