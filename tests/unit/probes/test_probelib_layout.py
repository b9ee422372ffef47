"""The host side's layout: a probe is probes/<name>.py and its probelib/<name>/; what several probes use (NVML access,
the /proc and /sys readers, the per-device outcome) lives in a shared library of probelib that is no probe's package.
Read from the import statements of every file under probes/."""
import ast
import os

import pytest

PROBES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "probes"))
LIBRARY = os.path.join(PROBES, "probelib")
PROBE_NAMES = sorted(entry[:-3] for entry in os.listdir(PROBES) if entry.endswith(".py"))
# collective_hosts.py is the collective probe spread over hosts: it runs probelib/collective/ as its own.
PACKAGE_OF = {"collective_hosts": "collective"}


def _python_files():
    for folder, subfolders, files in os.walk(PROBES):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def _owner(path):
    """The probe package a file belongs to, or None for the shared library."""
    relative = os.path.relpath(path, PROBES).split(os.sep)
    if len(relative) == 1:
        name = relative[0][:-3]
        return PACKAGE_OF.get(name, name)
    if len(relative) > 2 and relative[1] in PROBE_NAMES:
        return relative[1]
    return None


def _imported_modules(path):
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            for alias in node.names:
                yield "%s.%s" % (node.module, alias.name)


def _probe_package_imports():
    """(file, its owner, the probe package module it imports) for every import of probelib.<a probe>."""
    found = set()
    for path in _python_files():
        for module in _imported_modules(path):
            parts = module.split(".")
            if len(parts) >= 2 and parts[0] == "probelib" and parts[1] in PROBE_NAMES:
                imported = ".".join(parts[:3]) if len(parts) >= 3 else module
                found.add((os.path.relpath(path, PROBES), _owner(path), parts[1], imported))
    return found


def test_the_files_are_read():
    imports = _probe_package_imports()
    assert ("health.py", "health", "health", "probelib.health.cuda_init") in imports
    assert len(PROBE_NAMES) >= 12 and "health" in PROBE_NAMES


def test_no_other_probe_imports_the_health_probes_package():
    """NVML access, sysfs readers, the topology: shared code is in a library that says so, not in probelib/health/."""
    users = sorted(path for path, owner, package, imported in _probe_package_imports() if package == "health" and owner != "health")
    assert users == []


def test_the_shared_library_imports_no_probe_package():
    users = sorted((path, imported) for path, owner, package, imported in _probe_package_imports() if owner is None)
    assert users == []


def test_a_probe_imports_no_other_probes_package():
    """What two probes use (the PCIe rate table, the last-level cache, the sampler, iterations per point) is in the shared
    library, never read from another probe's package."""
    crossing = sorted((path, imported) for path, owner, package, imported in _probe_package_imports()
                      if owner is not None and package != owner)
    assert crossing == []


@pytest.mark.parametrize("name", sorted(os.listdir(LIBRARY)))
def test_every_shared_package_says_it_is_shared(name):
    """A folder of probelib/ that is no probe's package is a shared library: its docstring says who shares it."""
    init = os.path.join(LIBRARY, name, "__init__.py")
    if name in PROBE_NAMES or not os.path.isfile(init):
        return
    with open(init, encoding="utf-8") as handle:
        docstring = ast.get_docstring(ast.parse(handle.read())) or ""
    assert "share" in docstring.lower(), name
