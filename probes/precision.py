"""precision probe: how far fp16, bf16, fp8 and int8/int4 representations move the tensors of a real checkpoint."""
from __future__ import annotations

import sys
from typing import Any, Dict, List, Tuple

from probe_packages.precision.checkpoint import CheckpointError, describe, resolve
from probe_packages.precision.safetensors_file import SafetensorsError, read_header
from probe_packages.precision.selection import select
from probe_packages.precision.stats import OUTLIER_SIGMA
from probelib import outcome
from probelib.fields import unavailable
from probelib.runner import ProbeResult, main

DESCRIPTION = (
    "Measure, on tensors of a real safetensors checkpoint, the distribution (shape, dtype, min, max, absolute max, "
    "standard deviation, Pearson kurtosis, fraction of outliers beyond 6 standard deviations, spread of the per-row "
    "absolute maxima) and the representation error of fp16, bf16, fp8 e4m3 and e5m2 (one per-tensor scale), and "
    "symmetric int8 and int4 (per tensor and per row): relative error and SQNR in dB, computed on the GPU where "
    "present. Each tensor gets a ranking by storage width beside the ranking by error, the reversals between them, and "
    "sentences derived from the numbers (reversal, outlier effect, fp16 range, fp8 mantissa against exponent). Only "
    "the chosen tensors' bytes are read (a seek to each tensor's offset), never the whole file. No claim is made about "
    "model quality."
)
METHOD = {
    "reading": "without a checkpoint parameter the slice the collection ships is read after its sha256 is checked against "
               "its manifest; the safetensors header (8-byte little-endian length, then JSON) is parsed with the standard library and "
               "each chosen tensor's bytes are read by one seek and one read at its offset; F32, F16 and BF16 are "
               "measured, other dtypes are refused with the reason; the values are converted to float32 exactly",
    "selection": "without tensor names: the embedding is the largest 2-D weight whose name contains 'embeddings' (then "
                 "'embed', then 'wte'); the attention projection is the lowest layer's 'attention.self.query.weight' "
                 "(then 'q_proj', 'query', any 'attn'/'attention' weight); the MLP projection is the lowest layer's "
                 "'intermediate.dense.weight' (then 'up_proj', 'fc1', any 'mlp'/'ffn' weight); norms are never picked; "
                 "picked_by names the rule",
    "statistics": "float64; std is the population standard deviation (divide by n); kurtosis_pearson is m4 / m2^2 "
                  "(non-excess: a Gaussian's is 3); an outlier is an element with |x - mean| > 6 std; channels are the "
                  "rows (dim 0: nn.Linear's output features, an embedding's tokens), medians are true medians",
    "formats": "fp16 and bf16: cast to the type and back; fp8 e4m3 / e5m2: x / s clamped to the format's largest value "
               "(448 / 57344), cast to torch.float8_e4m3fn / float8_e5m2 and back, times s, s = absmax / largest value "
               "per tensor; int8 / int4: symmetric, s = absmax / 127 (or / 7) per tensor or per row, q = clamp(round(x / "
               "s)) * s with round half to even; a scale of 0 becomes 1",
    "error": "relative error = ||x - q|| / ||x||; SQNR dB = 10 log10(sum x^2 / sum (x - q)^2), sums in float64; an "
             "exact representation has relative error 0 and SQNR null with exact true (infinite); an overflow to inf "
             "gives both null with outcome infinite",
    "storage": "bits_per_element is the element's width (16, 8 or 4); float32 scales add 32 / element count (per "
               "tensor) or 32 / row length (per row) bits per element: effective_bits_per_element",
    "ranking": "ranking_by_bits lists the formats widest first (effective bits); ranking_by_sqnr smallest error first "
               "(exact first, an infinite error last); a reversal is a format with fewer bits per element and a higher "
               "SQNR than one with more; the explanation is built from these numbers only and says nothing about "
               "model quality",
}


def make_plan(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"checkpoint_param": params["checkpoint"], "tensors_param": list(params["tensors"]),
            "selection": "param tensors" if params["tensors"] else "name rules", "device_requested": params["device"],
            "outlier_sigma": OUTLIER_SIGMA, "max_tensor_mib": params["max_tensor_mib"]}


def collect(params: Dict[str, Any]) -> ProbeResult:
    import torch  # pylint: disable=import-outside-toplevel
    from probe_packages.precision.run import choose_device, measure_tensor  # pylint: disable=import-outside-toplevel
    from probelib.measure.opening import torch_environment  # pylint: disable=import-outside-toplevel

    environment = torch_environment(torch)
    data: Dict[str, Any] = {"method": METHOD, "plan": make_plan(params), "checkpoint": unavailable("not read"),
                            "device": unavailable("not chosen"), "tensors": [], "errors": []}
    try:
        checkpoint = resolve(params["checkpoint"])
    except (CheckpointError, OSError) as exc:
        data["checkpoint"] = unavailable(str(exc))
        return ProbeResult("error", data, str(exc), environment)
    try:
        header = read_header(checkpoint.path)
    except (OSError, SafetensorsError) as exc:
        data["checkpoint"] = unavailable("not a readable safetensors file: %s" % exc)
        return ProbeResult("error", data, "checkpoint %s is not a readable safetensors file: %s" % (checkpoint.path, exc),
                           environment)
    data["checkpoint"] = describe(checkpoint, header)
    try:
        device, data["device"] = choose_device(torch, params["device"])
    except RuntimeError as exc:
        data["device"] = unavailable(str(exc))
        return ProbeResult("unavailable", data, str(exc), environment)
    picks, errors = select(header.tensors, params["tensors"])
    tensors: List[Dict[str, Any]] = []
    for pick in picks:
        try:
            entry, format_errors = measure_tensor(torch, header, pick, device, params["max_tensor_mib"] << 20)
        except Exception as exc:  # one tensor failing leaves the others
            message = "%s: %s" % (type(exc).__name__, exc)
            entry, format_errors = dict(pick, error=message), [{"tensor": pick["name"], "what": "read", "error": message}]
        tensors.append(entry)
        errors.extend(format_errors)
    data["tensors"], data["errors"] = tensors, errors
    status, reason = outcome_of(tensors, errors)
    return ProbeResult(status, data, reason, environment)


def measured(tensors: List[Dict[str, Any]]) -> bool:
    return any("formats" in entry for entry in tensors)


def outcome_of(tensors: List[Dict[str, Any]], errors: List[Dict[str, str]]) -> Tuple[str, str]:
    return outcome.decide(errors, lambda error: "%s %s (%s)" % (error["tensor"], error["what"], error["error"]),
                          measured(tensors))


if __name__ == "__main__":
    sys.exit(main("precision", DESCRIPTION, collect, requires=("torch",)))
