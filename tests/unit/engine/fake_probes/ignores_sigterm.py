"""Ignores SIGTERM, so only SIGKILL ends it."""
import signal
import time

from _args import parse

parse()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(3600)
