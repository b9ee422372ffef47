"""A stand-in for a host's Python (gpufleet_python) that misbehaves for the health probe only.

make_interpreter(folder, case) writes <folder>/<case>, an executable whose shebang runs this file under this Python;
the engine then runs ``<this python> misbehaving_python.py <folder>/<case> <probe>.py --params F --out G``. Any probe
but health is handed to the real Python (os.execv), so the host's other probes run for real. Cases:

    surrogate_ifname  runs the real health probe with NCCL_SOCKET_IFNAME=eth<0xff>0 (bytes that are not UTF-8), which
                      it records in its envelope as a lone surrogate
    prints_env        prints its whole environment on stdout, a secret on stderr, writes no result and exits 1
"""
import os
import sys

CASES = ("surrogate_ifname", "prints_env")
BAD_IFNAME = b"eth\xff0"


def make_interpreter(folder, case):
    if case not in CASES:
        raise ValueError("unknown case %r (known: %s)" % (case, ", ".join(CASES)))
    os.makedirs(str(folder), exist_ok=True)
    path = os.path.join(os.path.abspath(str(folder)), case)
    with open(path, "w") as handle:
        handle.write("#!%s %s\n" % (sys.executable, os.path.abspath(__file__)))
    os.chmod(path, 0o755)
    return path


def _prints_env():
    for name, value in sorted(os.environ.items()):
        print("%s=%s" % (name, value))
    sys.stderr.write("about to fail; the token was %s\n" % os.environ.get("HF_TOKEN", ""))
    return 1


def main(argv):
    case = os.path.basename(argv[1])
    probe_argv = argv[2:]
    if os.path.basename(probe_argv[0]) != "health.py":
        os.execv(sys.executable, [sys.executable] + probe_argv)
    if case == "surrogate_ifname":
        os.environb[b"NCCL_SOCKET_IFNAME"] = BAD_IFNAME
        os.execv(sys.executable, [sys.executable] + probe_argv)
    return _prints_env()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
