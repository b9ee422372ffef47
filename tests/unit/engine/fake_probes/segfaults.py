"""Dies of SIGSEGV after printing a line on stderr."""
import os
import signal
import sys

from _args import parse

parse()
sys.stderr.write("about to touch a bad pointer\n")
sys.stderr.flush()
os.kill(os.getpid(), signal.SIGSEGV)
