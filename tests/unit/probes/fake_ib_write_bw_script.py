"""A real process standing in for ib_write_bw where no RDMA device exists: the server listens on the -p port (so the
kernel lists it in /proc/net/tcp), the client connects to it and prints what FAKE_IB_WRITE_BW_STDOUT holds. What goes
wrong is chosen by FAKE_IB_WRITE_BW: server_never_listens, server_hangs_after_the_run, client_hangs. Each process
writes its pid to FAKE_IB_WRITE_BW_PIDS so the tests can see it is gone afterwards. Copied beside the tests' tmp files
with a shebang line naming the tests' Python."""
import os
import socket
import sys
import time

HANG_S = 30


def main(argv):
    mode = os.environ.get("FAKE_IB_WRITE_BW", "ok")
    with open(os.environ["FAKE_IB_WRITE_BW_PIDS"], "a", encoding="ascii") as pids:
        pids.write("%d\n" % os.getpid())
    port = int(argv[argv.index("-p") + 1])
    if argv[-1] == "127.0.0.1":
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(b"go")
            if mode == "client_hangs":
                time.sleep(HANG_S)
        with open(os.environ["FAKE_IB_WRITE_BW_STDOUT"], encoding="utf-8") as stdout:
            sys.stdout.write(stdout.read())
        return 0
    if mode == "server_never_listens":
        time.sleep(HANG_S)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("", port))
        server.listen(1)
        connection, peer = server.accept()
        with connection:
            connection.recv(16)
            if mode == "server_hangs_after_the_run":
                time.sleep(HANG_S)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
