"""What every section receives: the parameters, the open NVML session, the roots it reads, a cache."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict

from probelib.health.nvml_access import NvmlSession


@dataclass
class SystemRoots:
    """Where the system is read from; tests point these at fake trees."""

    proc: str = "/proc"
    sys: str = "/sys"
    dev: str = "/dev"
    etc: str = "/etc"
    root: str = "/"
    var_log: str = "/var/log"


@dataclass
class HealthContext:
    params: Dict[str, Any]
    nvml: NvmlSession
    roots: SystemRoots = field(default_factory=SystemRoots)
    cache: Dict[str, Any] = field(default_factory=dict)

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]
