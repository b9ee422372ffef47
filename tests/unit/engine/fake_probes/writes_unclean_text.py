"""Writes an envelope whose data holds text that is not clean: params case = surrogate | not_utf8 | control."""
from _args import parse

ENVELOPE = (b'{"schema_version": "1", "probe": "fake", "host": "", "status": "ok",'
            b' "started": "2026-11-30T00:00:00+00:00", "duration_s": 0.1, "command": [], "environment": {},'
            b' "reason": "",'
            b' "data": {"gpus": [{"name": "H200"}, {"name": "%s"}]}}')
NAMES = {
    "surrogate": b"eth\\ud800",  # a JSON escape of a lone surrogate: valid JSON, not storable as UTF-8
    "not_utf8": b"eth\xff0",  # a raw byte that is not UTF-8
    "control": b"H200\\u001b[31m",  # an escaped ESC: valid JSON, a terminal escape sequence in the text
}

args, params = parse()
with open(args.out, "wb") as handle:
    handle.write(ENVELOPE % NAMES[params["case"]])
