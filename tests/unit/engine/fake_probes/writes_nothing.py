"""Exits 0 without writing a result."""
from _args import parse

parse()
