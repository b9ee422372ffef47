"""Exits with code 3 after an error message, writing no result."""
import sys

from _args import parse

parse()
sys.stderr.write("RuntimeError: CUDA driver initialization failed\n")
sys.exit(3)
