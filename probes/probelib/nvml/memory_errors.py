"""A GPU's memory error counters from NVML: ECC error counts (volatile: since the driver loaded; aggregate: over the
GPU's life) and remapped rows. The health probe reports them; memtest reads them before and after its patterns."""
from __future__ import annotations

from typing import Any, Dict

from probelib.fields import is_unavailable
from probelib.nvml.access import NvmlReader

# nvml.h enum values: nvmlMemoryErrorType_t, nvmlEccCounterType_t.
ECC_CORRECTED, ECC_UNCORRECTED = 0, 1
ECC_VOLATILE, ECC_AGGREGATE = 0, 1


def enabled_name(value: int) -> str:
    return "enabled" if value else "disabled"


def read_ecc(reader: NvmlReader, handle: Any) -> Dict[str, Any]:
    mode = reader.value("nvmlDeviceGetEccMode", handle)
    counts = {}
    for counter_name, counter in (("volatile", ECC_VOLATILE), ("aggregate", ECC_AGGREGATE)):
        for error_name, error_type in (("corrected", ECC_CORRECTED), ("uncorrected", ECC_UNCORRECTED)):
            counts["%s_%s_count" % (counter_name, error_name)] = reader.value(
                "nvmlDeviceGetTotalEccErrors", handle, error_type, counter)
    result = {
        "mode_current": mode if is_unavailable(mode) else enabled_name(mode[0]),
        "mode_pending": mode if is_unavailable(mode) else enabled_name(mode[1]),
    }
    result.update(counts)
    return result


def read_remapped_rows(reader: NvmlReader, handle: Any) -> Any:
    rows = reader.value("nvmlDeviceGetRemappedRows", handle)
    if is_unavailable(rows):
        return rows
    correctable, uncorrectable, pending, failure = rows
    return {"correctable_count": int(correctable), "uncorrectable_count": int(uncorrectable),
            "pending": bool(pending), "failure": bool(failure)}
