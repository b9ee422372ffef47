"""Prints its whole environment on stdout, a token on stderr, writes no result and exits 1."""
import os
import sys

from _args import parse

parse()
for name, value in sorted(os.environ.items()):
    print("%s=%s" % (name, value))
print(repr(dict(os.environ)))
print("and on its own: %s" % os.environ.get("HF_TOKEN", ""))
sys.stderr.write("login failed with token %s\n" % os.environ.get("HF_TOKEN", ""))
sys.exit(1)
