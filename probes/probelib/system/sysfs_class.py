"""Every entry of a sysfs class (/sys/class/<class>/<name>) read into a record: the one walk the probes that list a
class's devices share (fabric: infiniband, net), and the class's directory for a probe that reads one named entry
(fabric's RoCE GID table, health's dmi/id)."""
from __future__ import annotations

import os
from typing import Callable, Collection, List, TypeVar

from probelib.system.pci_place import sorted_names

Record = TypeVar("Record")


def class_dir(sys_root: str, class_name: str) -> str:
    return os.path.join(sys_root, "class", class_name)


def read_class(sys_root: str, class_name: str, read_entry: Callable[[str, str], Record],
               leave_out: Collection[str] = ()) -> List[Record]:
    """[read_entry(entry path, name)] for every entry of the class but those left out, sorted by name; [] when the
    class directory is absent or cannot be listed."""
    directory = class_dir(sys_root, class_name)
    return [read_entry(os.path.join(directory, name), name) for name in sorted_names(directory) if name not in leave_out]
