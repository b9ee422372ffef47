"""Point <results>/latest at a run, replacing an older link in one step."""
from __future__ import annotations

import os

from .paths import check_run_id


def point_latest_at(results_dir: str, run_id: str, link_name: str = "latest") -> str:
    results_dir = os.path.abspath(results_dir)
    link = os.path.join(results_dir, link_name)
    if os.path.exists(link) and not os.path.islink(link):
        raise OSError("%s exists and is not a link; move it away so that it can point at the latest run" % link)
    temporary = os.path.join(results_dir, ".%s.%d.tmp" % (link_name, os.getpid()))
    if os.path.lexists(temporary):
        os.unlink(temporary)
    os.symlink(check_run_id(run_id), temporary)
    os.replace(temporary, link)
    return link
