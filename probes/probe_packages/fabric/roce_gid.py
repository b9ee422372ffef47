"""The GID index an RDMA run uses on a RoCE port (``ib_write_bw -x``), from the port's GID table in sysfs.

Preferred: a RoCE v2 GID that holds an IPv4 address (routable, what NCCL uses by default); then any RoCE v2 GID; None
leaves perftest's own default (index 0). Only the index is returned: a GID holds the port's IP address, which the
probe does not record (docs/fabric.md). Files: Documentation/ABI/stable/sysfs-class-infiniband (ports/<n>/gids/<i>,
ports/<n>/gid_attrs/types/<i>).
"""
from __future__ import annotations

import os
from typing import Optional

from probelib.system.sysfs import read_stripped
from probelib.system.sysfs_class import class_dir

EMPTY_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
IPV4_MAPPED_PREFIX = "0000:0000:0000:0000:0000:ffff:"
ROCE_V2 = "roce v2"


def roce_gid_index(sys_root: str, device: str, port: int) -> Optional[int]:
    port_dir = os.path.join(class_dir(sys_root, "infiniband"), device, "ports", str(port))
    try:
        indices = sorted(int(name) for name in os.listdir(os.path.join(port_dir, "gids")) if name.isdigit())
    except OSError:
        return None
    roce_v2 = []
    for index in indices:
        try:
            gid = read_stripped(os.path.join(port_dir, "gids", str(index))).lower()
            kind = read_stripped(os.path.join(port_dir, "gid_attrs", "types", str(index))).lower()
        except OSError:
            continue  # the kernel refuses reading the type of an empty entry (EINVAL)
        if gid != EMPTY_GID and kind == ROCE_V2:
            roce_v2.append((not gid.startswith(IPV4_MAPPED_PREFIX), index))
    return min(roce_v2)[1] if roce_v2 else None
