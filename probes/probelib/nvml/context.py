"""What a reader of the GPUs receives: the parameters, the open NVML session, the roots it reads, a cache (the health
probe's sections, and the topology that p2p and collective read through them)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict

from probelib.nvml.access import NvmlSession
from probelib.system.roots import SystemRoots


@dataclass
class ReadContext:
    params: Dict[str, Any]
    nvml: NvmlSession
    roots: SystemRoots = field(default_factory=SystemRoots)
    cache: Dict[str, Any] = field(default_factory=dict)

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]
