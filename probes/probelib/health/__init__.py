"""The sections of the health probe, one job per module; standard library only at import time."""
