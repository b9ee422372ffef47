"""Where the system is read from: /proc, /sys, /dev, /etc, / and /var/log; tests point these at fake trees."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SystemRoots:
    """Where the system is read from; tests point these at fake trees."""

    proc: str = "/proc"
    sys: str = "/sys"
    dev: str = "/dev"
    etc: str = "/etc"
    root: str = "/"
    var_log: str = "/var/log"
