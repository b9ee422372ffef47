"""Starts a child that sleeps, records both pids, then hangs."""
import subprocess
import sys
import time

from _args import parse

args, params = parse()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
with open(params["pidfile"], "w") as handle:
    handle.write("%d %d" % (child.pid, __import__("os").getpid()))
time.sleep(3600)
