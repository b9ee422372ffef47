"""Make the probes folder importable (as the probes see it when they run: probelib beside the script)."""
import os
import sys

PROBES_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "probes"))
if PROBES_DIR not in sys.path:
    sys.path.insert(0, PROBES_DIR)
