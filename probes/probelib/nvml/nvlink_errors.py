"""NVLink error counters of one GPU, per link NVML supports, with their totals: replay, recovery, CRC flit, CRC data and
ECC data errors counted by the data link layer since the driver loaded (nvmlDeviceGetNvLinkErrorCounter)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from probelib.fields import is_unavailable, unavailable
from probelib.nvml.access import NVML_ERROR_FUNCTION_NOT_FOUND, NvmlReader, failure_reason, nvml_error_code

ERROR_COUNTER_FUNCTION = "nvmlDeviceGetNvLinkErrorCounter"
# nvml.h nvmlNvLinkErrorCounter_t: (the name recorded, NVML_NVLINK_ERROR_DL_*).
COUNTERS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3), ("ecc_data", 4))
COUNTER_NAMES = tuple(name for name, unused_code in COUNTERS)


def read_nvlink_errors(reader: NvmlReader, handle: Any, nvlink: Any) -> Any:
    """The counters of every link ``nvlink`` (probelib.nvml.nvlink.read_nvlinks) lists as supported, active or not.

    A GPU without NVLink (a PCIe card, a VM slice whose links the hypervisor hides) has no counter to read: that is said
    in words, never recorded as zeros."""
    if is_unavailable(nvlink):
        return unavailable("no NVLink error counters: the NVLink state could not be read (%s)" % nvlink["unavailable"])
    links = nvlink.get("links") or []
    if not links:
        return unavailable("no NVLink error counters: NVML supports no NVLink on this GPU (not supported for any of the %s "
                           "link indices asked: a PCIe card, or a VM slice whose NVLinks are not passed through)"
                           % nvlink.get("links_queried", "?"))
    if getattr(reader.module, ERROR_COUNTER_FUNCTION, None) is None:
        return unavailable("this nvidia-ml-py lacks %s: upgrade nvidia-ml-py to read NVLink error counters"
                           % ERROR_COUNTER_FUNCTION)
    rows = [read_link(reader, handle, entry["link"], entry.get("state")) for entry in links]
    lacking = _function_missing(rows)
    if lacking is not None:
        return unavailable(lacking)
    return {"links": rows, "totals": totals(rows)}


def read_link(reader: NvmlReader, handle: Any, link: int, state: Optional[str]) -> Dict[str, Any]:
    row: Dict[str, Any] = {"link": link, "state": state if state in ("active", "inactive") else "unknown"}
    for name, code in COUNTERS:
        ok, value = reader.attempt(ERROR_COUNTER_FUNCTION, handle, link, code)
        if not ok:
            row[name] = unavailable(failure_reason(value))
            if nvml_error_code(value) == NVML_ERROR_FUNCTION_NOT_FOUND:
                row["function_not_found"] = True
        else:
            row[name] = _count(value)
    return row


def _count(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return unavailable("%s returned %r, not a count" % (ERROR_COUNTER_FUNCTION, value))


def _function_missing(rows: List[Dict[str, Any]]) -> Optional[str]:
    """The driver's NVML lacks the function (an nvidia-ml-py newer than the driver): one reason for the whole GPU."""
    if rows and all(row.pop("function_not_found", False) for row in rows):
        return "the installed driver's NVML lacks %s, so no NVLink error counter can be read" % ERROR_COUNTER_FUNCTION
    for row in rows:
        row.pop("function_not_found", None)
    return None


def totals(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Each counter summed over the links that gave it; unavailable (with the first link's reason) when none did."""
    summed: Dict[str, Any] = {}
    for name in COUNTER_NAMES:
        values = [row[name] for row in rows if isinstance(row.get(name), int)]
        if values:
            summed[name] = sum(values)
        else:
            summed[name] = unavailable("no link gave a %s count (link %d: %s)" % (
                name, rows[0]["link"], rows[0][name]["unavailable"]))
    summed["links_counted"] = len(rows)
    return summed
