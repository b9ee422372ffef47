"""Writes something that is not JSON as its result."""
from _args import parse

args, unused_params = parse()
print("library noise on stdout {")
with open(args.out, "w") as handle:
    handle.write("Traceback? {not json at all")
