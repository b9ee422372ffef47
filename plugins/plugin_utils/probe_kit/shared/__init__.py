"""Helpers that several probe packages share (handed on to them by the kit, ../kit.py)."""
