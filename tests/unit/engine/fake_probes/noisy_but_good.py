"""A sound probe that prints library noise on stdout and stderr."""
import os
import sys

sys.path.insert(0, os.environ["GPUFLEET_PROBES_DIR"])
from probelib.runner import ProbeResult, main  # noqa: E402

print("W1130 02:00:00 some_library.cc:42] noise {\"status\": \"error\"}")
sys.stderr.write("a warning on stderr\n")
sys.exit(main("fake", "noisy but good", lambda params: ProbeResult("ok", {"answer_units": params["n"] * 2}),
              spec={"properties": {"n": {"type": "integer", "default": 0}}}))
