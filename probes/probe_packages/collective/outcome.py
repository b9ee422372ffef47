"""Status, reason and the shared members of a collective probe's data."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Tuple

from probe_packages.collective.environment import allowed_environment, nccl_version
from probelib import outcome as shared
from probelib.fields import unavailable


def measured(curves: List[Mapping[str, Any]]) -> bool:
    return any(curve.get("sweep") for curve in curves)


def outcome_of(curves: List[Mapping[str, Any]], errors: List[Mapping[str, str]]) -> Tuple[str, str]:
    """(status, reason). ok: a curve has points and nothing failed; partial: something failed but a curve has points;
    error: no point. The reason is empty for ok (the envelope requires it)."""
    return shared.decide(errors, lambda error: "curve %s, %s: %s" % (error["curve"], error["what"], error["error"]),
                         measured(curves))


def software(torch: Any, backend: str) -> Dict[str, Any]:
    return {"torch_version": str(torch.__version__),
            "nccl_version": nccl_version(torch) if backend == "nccl" else unavailable("gloo does not use NCCL"),
            "backend": backend}


def environment_nccl(environ: Mapping[str, str] = None) -> Dict[str, str]:
    return allowed_environment(os.environ if environ is None else environ)


def envelope_environment(torch: Any) -> Dict[str, Any]:
    environment = {"torch_version": str(torch.__version__)}
    if getattr(torch.version, "cuda", None):
        environment["torch_cuda_version"] = str(torch.version.cuda)
    return environment


def public_devices(devices: List[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """{index, uuid, name} of the GPUs (measured_devices entries); [] on the CPU path."""
    return [{"index": device["index"], "uuid": device["uuid"], "name": device["name"]}
            for device in devices if device.get("kind") == "cuda"]
