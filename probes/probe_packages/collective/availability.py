"""Whether this torch can all-reduce with the chosen backend at all ('' when it can)."""
from __future__ import annotations

from typing import Any


def backend_missing(torch: Any, backend: str) -> str:
    distributed = torch.distributed
    if not distributed.is_available():
        return "this torch was built without torch.distributed"
    if backend == "nccl" and not distributed.is_nccl_available():
        return "this torch was built without NCCL, so the GPUs cannot all-reduce through it"
    if backend == "gloo" and not distributed.is_gloo_available():
        return "this torch was built without gloo, so the CPU path cannot run"
    return ""
