"""The gemm probe's parameters that are more than a scalar: checked and resolved per device (no torch)."""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

from probe_packages.gemm.dtypes import DTYPE_NAMES
from probelib.fields import is_number

PARAMETER_BANDWIDTH = "parameter memory_bandwidth_gbps"
OWN_COPY = "own copy measurement"
PARAMETER_PEAK = "parameter peak_tflops"
BEST_MEASURED = "best measured shape"


class GemmParameterError(ValueError):
    """A parameter of the right JSON type but with a value the probe cannot use."""


def _positive_number(value: Any) -> bool:
    return is_number(value) and value > 0


def check_dtypes(dtypes: Any) -> Optional[List[str]]:
    if dtypes is None:
        return None
    if not isinstance(dtypes, list) or not dtypes or not all(isinstance(name, str) for name in dtypes):
        raise GemmParameterError("dtypes must be a non-empty list of names among %s" % ", ".join(DTYPE_NAMES))
    unknown = [name for name in dtypes if name not in DTYPE_NAMES]
    if unknown:
        raise GemmParameterError("unknown dtype(s) %s (known: %s)" % (", ".join(unknown), ", ".join(DTYPE_NAMES)))
    return list(dict.fromkeys(dtypes))


def check_bandwidth(value: Any) -> None:
    """memory_bandwidth_gbps: None, a positive number, or {GPU UUID (or "cpu"): positive number}."""
    if value is None or _positive_number(value):
        return
    if isinstance(value, dict) and value and all(isinstance(key, str) and _positive_number(number)
                                                 for key, number in value.items()):
        return
    raise GemmParameterError("memory_bandwidth_gbps must be a positive number or {GPU UUID: positive number}, not %r" % (value,))


def check_peaks(value: Any) -> None:
    """peak_tflops: None or {dtype: positive number}."""
    if value is None:
        return
    if not isinstance(value, dict) or not value:
        raise GemmParameterError("peak_tflops must be an object {dtype: TFLOP/s}, not %r" % (value,))
    unknown = [key for key in value if key not in DTYPE_NAMES]
    if unknown:
        raise GemmParameterError("peak_tflops names unknown dtype(s) %s (known: %s)" % (", ".join(map(str, unknown)), ", ".join(DTYPE_NAMES)))
    bad = [key for key, number in value.items() if not _positive_number(number)]
    if bad:
        raise GemmParameterError("peak_tflops must be positive numbers; not for %s" % ", ".join(bad))


def bandwidth_for(value: Any, kind: str, uuid: Any) -> Tuple[Optional[float], str]:
    """(GB/s from the parameter or None, a note saying where the ridge's bandwidth comes from)."""
    if value is None:
        return None, "memory_bandwidth_gbps was not given: the probe measured a device-to-device copy itself"
    if _positive_number(value):
        return float(value), "memory_bandwidth_gbps given as one number for every device"
    key = "cpu" if kind == "cpu" else uuid
    if isinstance(key, str) and key in value:
        return float(value[key]), "memory_bandwidth_gbps given for %s" % key
    return None, ("memory_bandwidth_gbps has no entry for %s: the probe measured a device-to-device copy itself"
                  % (key if isinstance(key, str) else "this device (no UUID)"))


def peak_for(value: Any, kind: str, dtype: str) -> Optional[float]:
    """The dense peak from the parameter (it holds a GPU SKU's figures, so it applies to GPUs only)."""
    if value is None or kind == "cpu" or dtype not in value:
        return None
    return float(value[dtype])


def check_token_counts(name: str, value: Any) -> Tuple[int, ...]:
    """model_prefill_tokens / model_decode_batches: a list of distinct positive integers (empty: that group is left out)."""
    if not isinstance(value, list) or not all(isinstance(count, int) and not isinstance(count, bool) and count > 0
                                              for count in value):
        raise GemmParameterError("%s must be a list of positive integers, not %r" % (name, value))
    if len(set(value)) != len(value):
        raise GemmParameterError("%s lists a count twice: %r" % (name, value))
    return tuple(value)


def check_model_config(path: Any, shapes: Any, prefill_tokens: Tuple[int, ...], decode_batches: Tuple[int, ...]) -> None:
    """model_config: null or a path; never with shapes (each replaces the production shapes), and some M to time."""
    if path is None:
        return
    if not isinstance(path, str) or not path.strip():
        raise GemmParameterError("model_config must be the path of a config.json on the host, not %r" % (path,))
    if shapes is not None:
        raise GemmParameterError("give shapes or model_config, not both: each replaces the production shapes")
    if not prefill_tokens and not decode_batches:
        raise GemmParameterError("model_prefill_tokens and model_decode_batches are both empty: no model shape to time")


def check_injection(value: Any) -> None:
    """inject_bit_flip (the test aid): null or {case: name, dtype?: name, device_index?, element?, bit?: integers >= 0}."""
    if value is None:
        return
    if not isinstance(value.get("case"), str) or ("dtype" in value and value["dtype"] not in DTYPE_NAMES):
        raise GemmParameterError("inject_bit_flip needs case (a case name) and at most a known dtype, not %r" % (value,))
    for key in ("device_index", "element", "bit"):
        if key in value and (not isinstance(value[key], int) or isinstance(value[key], bool) or value[key] < 0):
            raise GemmParameterError("inject_bit_flip %s must be an integer >= 0, not %r" % (key, value[key]))
    if value.get("bit", 0) > 31:
        raise GemmParameterError("inject_bit_flip bit must be 0..31 (the widest product element has 32 bits)")
