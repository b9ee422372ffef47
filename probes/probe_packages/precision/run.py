"""Measure one tensor of the checkpoint: read its bytes, then statistics, formats, rankings and the explanation."""
from __future__ import annotations

import time
from typing import Any, Dict, List, Tuple

from probe_packages.precision import explain
from probe_packages.precision.formats import FORMATS, measure, reference
from probe_packages.precision.safetensors_file import Header, SafetensorsError, check_readable, read_tensor_bytes
from probe_packages.precision.stats import fp16_range, tensor_stats
from probelib.measure.devices import refuse_hidden_gpus
from probelib.sweep import significant

TORCH_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


def rounded(value: Any) -> Any:
    """Floats to 6 significant digits, recursively; everything else unchanged."""
    if isinstance(value, float):
        return significant(value, 6)
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [rounded(item) for item in value]
    return value


def choose_device(torch: Any, requested: str) -> Tuple[Any, Dict[str, Any]]:
    """(torch.device, {kind, name}); auto takes the current CUDA GPU when torch sees one, else the CPU on a host
    without NVIDIA GPUs (GpuHiddenError where CUDA cannot see the host's GPUs)."""
    if requested not in ("auto", "cuda", "cpu"):
        raise ValueError("device must be auto, cuda or cpu, not %r" % requested)
    if requested != "cpu":
        refuse_hidden_gpus(torch)
    if requested == "cuda" or (requested == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise RuntimeError("device is cuda but torch sees no CUDA GPU (torch.cuda.is_available() is False)")
        index = torch.cuda.current_device()
        return torch.device("cuda", index), {"kind": "cuda", "name": torch.cuda.get_device_name(index), "index": index}
    return torch.device("cpu"), {"kind": "cpu", "name": "CPU", "index": 0}


def load(torch: Any, header: Header, name: str, device: Any, max_bytes: int) -> Any:
    """The tensor as float32 on ``device``, read from its own bytes of the file only."""
    if name not in header.tensors:
        raise SafetensorsError("the checkpoint has no tensor named %r" % name)
    entry = header.tensors[name]
    check_readable(entry)
    if entry.nbytes > max_bytes:
        raise SafetensorsError("tensor %r holds %d bytes, more than max_tensor_mib (%d bytes)" % (name, entry.nbytes, max_bytes))
    raw = read_tensor_bytes(header, name)
    host = torch.frombuffer(raw, dtype=getattr(torch, TORCH_DTYPES[entry.dtype])).reshape(entry.shape)
    return host.to(device).to(torch.float32)


def measure_tensor(torch: Any, header: Header, pick: Dict[str, str], device: Any, max_bytes: int
                   ) -> Tuple[Dict[str, Any], List[Dict[str, str]]]:
    """The tensor's entry and the errors of formats that failed; raises when the tensor itself cannot be read."""
    started = time.perf_counter()
    entry = header.tensors.get(pick["name"])
    x = load(torch, header, pick["name"], device, max_bytes)
    stats = tensor_stats(x)
    ranges = fp16_range(x)
    formats, errors = [], []
    ref = reference(torch, x)
    for fmt in FORMATS:
        if fmt.granularity == "channel" and x.dim() < 2:
            continue
        try:
            formats.append(measure(torch, ref, fmt))
        except Exception as exc:  # one format failing leaves the others
            errors.append({"tensor": pick["name"], "what": fmt.name, "error": "%s: %s" % (type(exc).__name__, exc)})
    findings = explain.findings(formats, stats, ranges)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    result = dict(pick)
    result.update({
        "dtype": entry.dtype, "shape": list(entry.shape), "size_bytes": entry.nbytes,
        "stats": stats, "fp16_range": ranges, "formats": formats,
        "ranking_by_bits": explain.ranking_by_bits(formats), "ranking_by_sqnr": explain.ranking_by_sqnr(formats),
        "reversals": explain.reversals(formats), "findings": findings, "explanation": explain.explanation(findings),
        "elapsed_s": time.perf_counter() - started,
    })
    return rounded(result), errors
