"""The load plan: parameters checked, the quick defaults applied, the plan recorded as it runs."""
from __future__ import annotations

from typing import Any, Dict

from probelib.fields import is_number
from probelib.runner import ParameterError

DEFAULT_DURATION_S = 60.0
QUICK_DURATION_S = 20.0
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
MIN_SAMPLE_INTERVAL_S = 0.05
COOLDOWN_INTERVAL_S = 1.0


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ParameterError(message)


def check_params(params: Dict[str, Any]) -> None:
    """Refuse what the runner's type check lets through (a negative wait, a warm-up longer than the load)."""
    duration = params["duration_s"]
    _require(duration is None or (is_number(duration) and duration > 0),
             "duration_s must be a positive number of seconds or null (60, 20 when quick), not %r" % (duration,))
    _require(is_number(params["sample_interval_s"]) and params["sample_interval_s"] >= MIN_SAMPLE_INTERVAL_S,
             "sample_interval_s must be a number >= %g, not %r" % (MIN_SAMPLE_INTERVAL_S, params["sample_interval_s"]))
    _require(is_number(params["process_interval_s"]) and params["process_interval_s"] >= params["sample_interval_s"],
             "process_interval_s must be a number >= sample_interval_s, not %r" % (params["process_interval_s"],))
    for key in ("warmup_s", "settle_s", "cooldown_s", "clock_rise_mhz", "power_margin_pct"):
        _require(is_number(params[key]) and params[key] >= 0, "%s must be a number >= 0, not %r" % (key, params[key]))
    _require(isinstance(params["matmul_n"], int) and not isinstance(params["matmul_n"], bool) and params["matmul_n"] >= 256,
             "matmul_n must be a whole number >= 256, not %r" % (params["matmul_n"],))
    _require(params["dtype"] in DTYPES, "dtype must be one of %s, not %r" % (", ".join(sorted(DTYPES)), params["dtype"]))
    _require(params["warmup_s"] < duration_s(params),
             "warmup_s (%g) must be shorter than the load (duration_s %g)" % (params["warmup_s"], duration_s(params)))


def duration_s(params: Dict[str, Any]) -> float:
    if params["duration_s"] is not None:
        return float(params["duration_s"])
    return QUICK_DURATION_S if params["quick"] else DEFAULT_DURATION_S


def make_plan(params: Dict[str, Any]) -> Dict[str, Any]:
    """The plan as it runs (every time in seconds, the product size and dtype, the thresholds of the checks' inputs)."""
    n = int(params["matmul_n"])
    return {
        "quick": bool(params["quick"]),
        "duration_s": duration_s(params),
        "sample_interval_s": float(params["sample_interval_s"]),
        "process_interval_s": float(params["process_interval_s"]),
        "warmup_s": float(params["warmup_s"]),
        "settle_s": float(params["settle_s"]),
        "cooldown_s": float(params["cooldown_s"]),
        "cooldown_interval_s": COOLDOWN_INTERVAL_S,
        "matmul_n": n,
        "dtype": params["dtype"],
        "flop_per_product": 2 * n ** 3,
        "clock_rise_mhz": float(params["clock_rise_mhz"]),
        "power_margin_pct": float(params["power_margin_pct"]),
    }
