"""The Python files under probes/ (the scripts, the shared library, the probe packages), for the tests that read them."""
import os

PROBES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "probes"))


def python_files(leave_out=()):
    """Every .py under probes/ in a fixed order, but the files (absolute paths) in leave_out."""
    for folder, subfolders, files in os.walk(PROBES):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith(".py") and path not in leave_out:
                yield path
