"""Writes ``mib`` MiB: into its result file (where = file), or on stdout without a result (where = stdout)."""
import sys

from _args import parse

CHUNK = b"x" * (1024 * 1024)
args, params = parse()
out = open(args.out, "wb") if params["where"] == "file" else sys.stdout.buffer
out.write(b'{"schema_version": "1", "probe": "fake", "status": "ok", "data": {"blob": "')
for unused in range(params["mib"]):
    out.write(CHUNK)
out.write(b'"}, "tail": "the end"}')
out.close()
