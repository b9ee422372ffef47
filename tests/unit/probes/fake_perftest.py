"""Stand-ins for the ib_write_bw processes of the rdma_bandwidth tests: each records its argv and keyword arguments,
writes what it is told to into the files it is given, and "listens" by adding its TCP port to a fake /proc/net/tcp."""
import os

PATH = "/usr/bin/ib_write_bw"
HELP_WITH_CUDA = ("Usage:\n  ib_write_bw            start a server and wait for connection\n"
                  "  -d, --ib-dev=<dev>  Use IB device <dev> (default first device found)\n"
                  "      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)\n"
                  "      --use_cuda=<cuda device id> Use CUDA specific device for GPUDirect RDMA testing\n")
HELP_WITHOUT_CUDA = HELP_WITH_CUDA.replace("      --use_cuda=<cuda device id> Use CUDA specific device for GPUDirect RDMA testing\n", "")


def which_finds(path=PATH):
    return lambda name: path if name == "ib_write_bw" else None


def answers(help_text=HELP_WITH_CUDA, version="Version: 6.06\n", timed_out=()):
    """A run(argv, timeout_s) answering --version and --help as perftest does (exit status 1); calls are recorded."""
    calls = []

    def run(argv, timeout_s):
        calls.append((list(argv), timeout_s))
        if argv[1] in timed_out:
            return {"returncode": -9, "timed_out": True, "stdout": "", "stderr": ""}
        stdout = version if argv[1] == "--version" else help_text
        return {"returncode": 1, "timed_out": False, "stdout": stdout, "stderr": ""}

    run.calls = calls
    return run


class FakeProcess:
    def __init__(self, argv, kwargs, behaviour, proc_root):
        self.argv, self.kwargs = list(argv), kwargs
        self.returncode = None
        self.killed = False
        self.reaped = False
        self.exit_code = behaviour.get("exit")  # None: runs until killed
        kwargs["stdout"].write(behaviour.get("stdout", "").encode())
        kwargs["stderr"].write(behaviour.get("stderr", "").encode())
        if behaviour.get("listen"):
            port = int(argv[argv.index("-p") + 1])
            with open(os.path.join(proc_root, "net", "tcp"), "a", encoding="ascii") as tcp:
                tcp.write("   1: 00000000:%04X 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n" % port)

    def poll(self):
        if self.returncode is None and self.exit_code is not None:
            self.returncode = self.exit_code
        return self.returncode

    def kill(self):
        self.killed = True
        self.returncode = -9

    def wait(self, timeout=None):
        self.poll()
        self.reaped = self.returncode is not None
        return self.returncode


class FakePopen:
    """popen(argv, **kwargs): the server is a process started without the address, the client with it."""

    def __init__(self, proc_root, server=None, client=None):
        self.proc_root = proc_root
        os.makedirs(os.path.join(proc_root, "net"), exist_ok=True)
        with open(os.path.join(proc_root, "net", "tcp"), "w", encoding="ascii") as tcp:
            tcp.write("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
        self.server = server if server is not None else {"listen": True, "exit": 0}
        self.client = client if client is not None else {"exit": 0, "stdout": ""}
        self.processes = []

    def __call__(self, argv, **kwargs):
        role = self.client if argv[-1] == "127.0.0.1" else self.server
        behaviour = role(argv) if callable(role) else role
        process = FakeProcess(argv, kwargs, behaviour, self.proc_root)
        self.processes.append(process)
        return process
