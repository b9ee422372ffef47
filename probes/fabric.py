"""fabric probe: PLACEHOLDER on branch fabricjudge (the controller side needs a script to pair with); helper
fabrichost's probes/fabric.py replaces it at merge. It reads nothing and says so."""
from __future__ import annotations

import sys
from typing import Any, Dict

from probelib.runner import ProbeResult, main

DESCRIPTION = "Placeholder: the fabric probe's host side is built on another branch (issue 34, fabrichost)."
NOT_HERE = {"unavailable": "the fabric probe's host side is not on this branch (placeholder)"}


def collect(params: Dict[str, Any]) -> ProbeResult:
    return ProbeResult("unavailable", {"rdma_devices": NOT_HERE, "ethernet": NOT_HERE, "gpus": NOT_HERE, "gpudirect": NOT_HERE,
                                       "rdma_bandwidth": NOT_HERE}, reason=NOT_HERE["unavailable"])


if __name__ == "__main__":
    sys.exit(main("fabric", DESCRIPTION, collect))
