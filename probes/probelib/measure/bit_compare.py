"""Is a product what it was? A result compared with its reference bit for bit (the elements' bit patterns, so -0 and +0
differ and a NaN equals the same NaN), or within a stated tolerance where the library does not promise the same bits;
the comparison queued on the device without waiting, read later; a single bit flipped on purpose (the test aid); the
sha256 of a product's bytes. torch is passed in, never imported here.

The rule, from the libraries' documentation: cuBLAS gives the same bits at every run for a given toolkit version on GPUs
of the same architecture and SM count while one stream is active, or several streams each with its own workspace
(NVIDIA cuBLAS docs, "Results reproducibility"), which PyTorch gives every handle and stream it uses (pytorch/pytorch#85447,
#161749): so bit for bit on one GPU and stream, and across GPUs of one model in one process. A CPU BLAS promises nothing
without its reproducibility mode (oneMKL, "Numerical reproducibility"), and a GPU could break the promise too: two products
of the same inputs at rest say which holds here (the load: before it starts; gemm: only after a case's products differed);
where they differ the result is compared within TOLERANCE_ULPS units of the output dtype's precision at the reference's
largest magnitude, and the record says so (mode tolerance).
"""
from __future__ import annotations

import ctypes
import hashlib
import math
from typing import Any, Dict, List, Optional

BITWISE = "bitwise"
TOLERANCE = "tolerance"
# A reordered sum of K products changes an element by a few units of the output's last place at the product's scale;
# a flipped sign or exponent bit of a non-tiny element moves it far more. Used only where two products at rest differ.
TOLERANCE_ULPS = 8
INTEGER_VIEWS = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}


def bits(torch: Any, tensor: Any) -> Any:
    """The tensor's elements as integers of the same width (a view: nothing is copied)."""
    return tensor.view(getattr(torch, INTEGER_VIEWS[tensor.element_size()]))


def flip_bit(torch: Any, tensor: Any, element: int, bit: int) -> None:
    """Flip one bit of one element (flat index) in place, on the tensor's device: the injected corruption (test aid)."""
    flat = bits(torch, tensor).reshape(-1)
    width = tensor.element_size() * 8
    if not 0 <= element < flat.numel() or not 0 <= bit < width:
        raise ValueError("cannot flip bit %d of element %d: the product has %d elements of %d bits" % (bit, element, flat.numel(), width))
    mask = -(1 << bit) if bit == width - 1 and width > 8 else 1 << bit
    flat[element:element + 1].bitwise_xor_(mask)


def tolerance_for(torch: Any, reference: Any) -> float:
    """The stated tolerance: TOLERANCE_ULPS x the output dtype's machine epsilon x the reference's largest magnitude."""
    largest = float(reference.abs().amax().float().item())
    return TOLERANCE_ULPS * float(torch.finfo(reference.dtype).eps) * largest


def queue(torch: Any, result: Any, reference: Any, tolerance: Optional[float] = None) -> Dict[str, Any]:
    """The comparison as device scalars, queued on the current stream without waiting: how many elements differ (bit
    patterns, or |diff| > tolerance), the first that does (flat index; 0 when none), the values there, the largest |diff|
    (computed in the output dtype)."""
    if tolerance is None:
        differ = bits(torch, result) != bits(torch, reference)
    else:
        differ = ~((result.float() - reference.float()).abs() <= tolerance)  # a NaN differs
    flat = differ.reshape(-1)
    first = flat.to(torch.uint8).argmax().reshape(1)  # argmax returns the first of equal maxima
    return {"count": flat.sum(), "first": first, "got": result.reshape(-1).index_select(0, first),
            "expected": reference.reshape(-1).index_select(0, first),
            "max_abs_diff": (result - reference).abs().amax()}


def read(pending: Dict[str, Any], columns: int) -> Dict[str, Any]:
    """A queued comparison as numbers (this waits for it): differing_elements, and where any differ the first one's
    [row, column], its value and the reference's, and the largest |diff| ("nan"/"inf" where not finite)."""
    count = int(pending["count"].item())
    record: Dict[str, Any] = {"equal": count == 0, "differing_elements": count}
    if count:
        first = int(pending["first"].item())
        record["first_index"] = [first // columns, first % columns]
        record["first_got"] = magnitude(float(pending["got"].float().item()))
        record["first_expected"] = magnitude(float(pending["expected"].float().item()))
        record["max_abs_diff"] = magnitude(float(pending["max_abs_diff"].float().item()))
    else:
        record["max_abs_diff"] = 0.0
    return record


def compare(torch: Any, result: Any, reference: Any, tolerance: Optional[float] = None) -> Dict[str, Any]:
    """queue then read: the comparison of a 2-D result with its reference, waited for."""
    return read(queue(torch, result, reference, tolerance), result.shape[-1])


def magnitude(value: float) -> Any:
    """A float for JSON: itself when finite (every digit: a flipped low bit of an fp32 shows in its seventh), else "nan",
    "inf" or "-inf"."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def sha256_of(torch: Any, tensor: Any) -> str:
    """The sha256 of the tensor's bytes (row-major, the device's bit patterns), read on the host."""
    host = bits(torch, tensor).contiguous().cpu()
    size = host.numel() * host.element_size()
    return hashlib.sha256(ctypes.string_at(host.data_ptr(), size) if size else b"").hexdigest()


def at_rest(pair: Dict[str, Any], tolerance: float) -> Dict[str, Any]:
    """The mode two products of the same inputs at rest decide: bitwise where they agree bit for bit, else tolerance
    (stated), with how far they differed."""
    if pair["equal"]:
        return {"mode": BITWISE, "deterministic": True, "tolerance": None}
    return {"mode": TOLERANCE, "deterministic": False, "tolerance": float("%.6g" % tolerance),
            "at_rest_difference": {key: pair[key] for key in ("differing_elements", "max_abs_diff")}}


def kept(entries: List[Dict[str, Any]], entry: Dict[str, Any], limit: int = 10) -> None:
    """Append ``entry`` while fewer than ``limit`` are kept (the first mismatches tell the story; the counts keep the rest)."""
    if len(entries) < limit:
        entries.append(entry)
