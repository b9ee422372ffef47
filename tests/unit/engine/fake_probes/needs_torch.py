"""A probe that needs torch; run under `python -S` it cannot import it."""
import os
import sys

sys.path.insert(0, os.environ["GPUFLEET_PROBES_DIR"])
from probelib.runner import ProbeResult, main  # noqa: E402

sys.exit(main("fake", "needs torch", lambda params: ProbeResult("ok", {}), requires=("torch",), spec={"properties": {}}))
