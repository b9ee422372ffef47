"""The one walk over a sysfs class (probelib/system/sysfs_class.py): every entry by name, those left out skipped, an
absent class read as none; and the one place a probe's path into /sys/class is made."""
import ast
import os

from probe_sources import PROBES, python_files
from probelib.system import sysfs_class
from probelib.system.sysfs_class import read_class


def test_every_entry_of_the_class_is_read_in_name_order_but_those_left_out(tmp_path):
    for name in ("eth1", "lo", "eth0"):
        (tmp_path / "class" / "net" / name).mkdir(parents=True)
    read = read_class(str(tmp_path), "net", lambda entry, name: (entry, name), leave_out=("lo",))
    assert read == [(str(tmp_path / "class" / "net" / name), name) for name in ("eth0", "eth1")]


def test_an_absent_class_has_no_entries(tmp_path):
    assert read_class(str(tmp_path), "infiniband", lambda entry, name: name) == []


def _joins_into_class(path):
    """The lines of path that join a path through "class" themselves (os.path.join(root, "class", name, ...)); "class" as
    the last part is a PCI device's own class file."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
            and any(isinstance(arg, ast.Constant) and arg.value == "class" for arg in node.args[:-1])]


def test_no_probe_makes_its_own_path_into_a_sysfs_class():
    """A probe that reads a class (fabric's infiniband and net, its RoCE GID table, health's dmi/id) goes through
    sysfs_class (read_class, class_dir)."""
    made = ["%s:%d" % (os.path.relpath(path, PROBES), line)
            for path in python_files(leave_out=(os.path.abspath(sysfs_class.__file__),)) for line in _joins_into_class(path)]
    assert made == []
