"""The one walk over a sysfs class (probelib/system/sysfs_class.py): every entry by name, those left out skipped, an
absent class read as none."""
from probelib.system.sysfs_class import read_class


def test_every_entry_of_the_class_is_read_in_name_order_but_those_left_out(tmp_path):
    for name in ("eth1", "lo", "eth0"):
        (tmp_path / "class" / "net" / name).mkdir(parents=True)
    read = read_class(str(tmp_path), "net", lambda entry, name: (entry, name), leave_out=("lo",))
    assert read == [(str(tmp_path / "class" / "net" / name), name) for name in ("eth0", "eth1")]


def test_an_absent_class_has_no_entries(tmp_path):
    assert read_class(str(tmp_path), "infiniband", lambda entry, name: name) == []
