"""Writes valid JSON that is not an envelope."""
import json

from _args import parse

args, unused_params = parse()
with open(args.out, "w") as handle:
    json.dump([1, 2, 3], handle)
