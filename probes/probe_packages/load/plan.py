"""The load plan: the checks across parameters, the quick defaults applied, the plan recorded as it runs."""
from __future__ import annotations

from typing import Any, Dict

from probelib.params import require

DEFAULT_DURATION_S = 60.0
QUICK_DURATION_S = 20.0
DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
COOLDOWN_INTERVAL_S = 1.0
SEED = 35


def check_params(params: Dict[str, Any]) -> None:
    """What the spec (params.json) cannot say: checks across parameters."""
    require(params["process_interval_s"] >= params["sample_interval_s"],
            "process_interval_s must be a number >= sample_interval_s, not %r" % (params["process_interval_s"],))
    require(params["warmup_s"] < duration_s(params),
            "warmup_s (%g) must be shorter than the load (duration_s %g)" % (params["warmup_s"], duration_s(params)))
    injection = params["inject_bit_flip"]
    if injection is not None:
        require("gpu" in injection and "check" in injection and injection["check"] >= 1,
                "inject_bit_flip needs gpu (an index) and check (>= 1), not %r" % (injection,))
        require(injection.get("element", 0) < int(params["matmul_n"]) ** 2,
                "inject_bit_flip element %r is beyond the %d x %d product" % (injection.get("element"), params["matmul_n"], params["matmul_n"]))
        require(injection.get("bit", 0) < 16, "inject_bit_flip bit must be 0..15 (a %s element has 16 bits)" % params["dtype"])


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
        "seed": SEED,
        "verify_every_checkpoints": int(params["verify_every_checkpoints"]),
        "inject_bit_flip": dict(params["inject_bit_flip"]) if params["inject_bit_flip"] is not None else None,
    }
