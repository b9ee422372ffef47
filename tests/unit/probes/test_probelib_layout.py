"""The host side's layout: a probe is probes/<name>.py and its own package probes/probe_packages/<name>/; what several
probes use (NVML access, the /proc and /sys readers, the per-GPU opening, the per-device outcome) is the shared library
probes/probelib/, which holds no probe's package (issue 47: a probe named like a library folder would have collided).
Read from the import statements, and the task names a worker imports by name, of every file under probes/."""
import ast
import os

import pytest

from ansible_collections.gpufleet.validation.plugins.plugin_utils.probe_archive import available_probes
from probe_sources import PROBES, python_files

ROOT = os.path.dirname(PROBES)
LIBRARY = os.path.join(PROBES, "probelib")
PACKAGES = os.path.join(PROBES, "probe_packages")
PROBE_NAMES = available_probes(ROOT)
# collective_hosts.py is the collective probe spread over hosts: it runs probe_packages/collective/ as its own.
PACKAGE_OF = {"collective_hosts": "collective"}


def _owner(path):
    """The probe package a file belongs to, or None for the shared library (and probe_packages/__init__.py)."""
    relative = os.path.relpath(path, PROBES).split(os.sep)
    if len(relative) == 1:
        name = relative[0][:-3]
        return PACKAGE_OF.get(name, name)
    if relative[0] == "probe_packages" and len(relative) > 2:
        return relative[1]
    return None


def _imported_modules(path):
    """Every module the file imports, and every "module:function" task it names for a worker to import."""
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
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("probe_packages."):
            yield node.value.split(":")[0]


def _probe_package_imports():
    """(file, its owner, the probe package, the module) for every import of probe_packages.<a package>."""
    found = set()
    for path in python_files():
        for module in _imported_modules(path):
            parts = module.split(".")
            if len(parts) >= 2 and parts[0] == "probe_packages":
                found.add((os.path.relpath(path, PROBES), _owner(path), parts[1], ".".join(parts[:3])))
    return found


def test_the_files_are_read():
    imports = _probe_package_imports()
    assert ("health.py", "health", "health", "probe_packages.health.cuda_init") in imports
    assert ("probe_packages/gemm/together.py", "gemm", "gemm", "probe_packages.gemm.together_worker") in imports  # a task
    assert len(PROBE_NAMES) >= 12 and "health" in PROBE_NAMES


def test_the_shared_library_holds_no_probe_package():
    """No folder or module of probelib/ is named like a registered probe (probes/<name>.py)."""
    named = sorted(entry for entry in os.listdir(LIBRARY) if entry != "__pycache__"
                   and (entry[:-3] if entry.endswith(".py") else entry) in PROBE_NAMES)
    assert named == []


def test_probe_packages_holds_only_the_packages_of_registered_probes():
    folders = sorted(entry for entry in os.listdir(PACKAGES) if os.path.isdir(os.path.join(PACKAGES, entry)) and entry != "__pycache__")
    assert folders and set(folders) <= set(PROBE_NAMES), sorted(set(folders) - set(PROBE_NAMES))


def test_the_shared_library_imports_no_probe_package():
    users = sorted((path, imported) for path, owner, package, imported in _probe_package_imports() if owner is None)
    assert users == []


def test_a_probe_imports_no_other_probes_package():
    """What two probes use (the PCIe rate table, the last-level cache, the sampler, iterations per point) is in the shared
    library, never read from another probe's package."""
    crossing = sorted((path, imported) for path, owner, package, imported in _probe_package_imports()
                      if owner is not None and package != owner)
    assert crossing == []


@pytest.mark.parametrize("name", sorted(entry for entry in os.listdir(LIBRARY) if os.path.isdir(os.path.join(LIBRARY, entry))))
def test_every_shared_package_says_it_is_shared(name):
    """A folder of probelib/ is a shared library: its docstring says who shares it."""
    init = os.path.join(LIBRARY, name, "__init__.py")
    if not os.path.isfile(init):
        return
    with open(init, encoding="utf-8") as handle:
        docstring = ast.get_docstring(ast.parse(handle.read())) or ""
    assert "share" in docstring.lower(), name
