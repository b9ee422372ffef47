"""Writes a good envelope but leaves a child running in its process group."""
import subprocess
import sys

sys.path.insert(0, __import__("os").environ["GPUFLEET_PROBES_DIR"])
from probelib.runner import ProbeResult, main  # noqa: E402

from _args import parse  # noqa: E402

args, params = parse()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
with open(params["pidfile"], "w") as handle:
    handle.write(str(child.pid))
sys.exit(main("fake", "leaves a child", lambda p: ProbeResult("ok", {"child": child.pid}),
              spec={"properties": {"pidfile": {"type": "string", "default": ""}}}, argv=["--params", args.params, "--out", args.out]))
