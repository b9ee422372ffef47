"""Make the collection importable as ansible_collections.gpufleet.validation, and the probe library too."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for path in (os.path.join(ROOT, "collections"), os.path.join(ROOT, "probes")):
    if path not in sys.path:
        sys.path.insert(0, path)
