"""Shared code of the probe scripts: standard library only, Python >= 3.9."""
