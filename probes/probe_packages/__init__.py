"""The probes' own packages: probe_packages/<name>/ is what probes/<name>.py alone uses; what several probes share is
the library probelib/, never another probe's package. Standard library only at import time, Python >= 3.9."""
