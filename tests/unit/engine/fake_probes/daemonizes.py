"""Double-forks a setsid daemon (``sleep``, out of the probe's process group), then writes a good envelope.

params pidfile: where the daemon writes its pid, its session id and the probe's pid."""
import os
import sys
import time

sys.path.insert(0, os.environ["GPUFLEET_PROBES_DIR"])
from probelib.runner import ProbeResult, main  # noqa: E402

from _args import parse  # noqa: E402

args, params = parse()
probe_pid = os.getpid()
middle = os.fork()
if middle == 0:
    os.setsid()
    if os.fork() == 0:
        with open(params["pidfile"] + ".tmp", "w") as handle:
            handle.write("%d %d %d" % (os.getpid(), os.getsid(0), probe_pid))
        os.rename(params["pidfile"] + ".tmp", params["pidfile"])
        os.execv("/bin/sleep", ["sleep", "3600"])
    os._exit(0)
os.waitpid(middle, 0)
while not os.path.exists(params["pidfile"]):
    time.sleep(0.01)
sys.exit(main("fake", "leaves a daemon", lambda p: ProbeResult("ok", {}), spec={"properties": {"pidfile": {"type": "string", "default": ""}}},
              argv=["--params", args.params, "--out", args.out]))
