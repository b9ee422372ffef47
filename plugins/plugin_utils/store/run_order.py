"""The order of a results directory's runs: the order the controller opened them in, not the clock a run id was named by.

open_run (store/run_dir.py) gives each fresh run the next number, run.json's ``sequence``, while it holds the results
directory's lock, so a run opened after another is the newer one even where the controller's clock ran behind and its
id names an earlier time. Runs stored before runs were numbered (no run.json, or one without a sequence) come before
every numbered run, ordered among themselves by the UTC time their id starts with, else by their directory's
modification time.
"""
from __future__ import annotations

import json
import os
import re
from typing import Dict, List, Optional, Sequence, Tuple

from .paths import RESERVED_RUN_IDS, RUN_ID_PATTERN, RUN_RECORD_FILE, RUN_RECORD_LIMIT_BYTES
from .safe_fs import open_dirs, read_bytes_at

SEQUENCE_FIELD = "sequence"
_TIMESTAMPED_RUN_ID = re.compile(r"^(\d{8})T(\d{6})Z")

RunOrderKey = Tuple[int, int, str]


def opened_sequence(results_dir: str, run_id: str) -> int:
    """The run's number in the order runs were opened (run.json's sequence); 0 for a run stored before runs were
    numbered, or whose record cannot be read (the store's readers say why where they read it)."""
    try:
        with open_dirs(results_dir, [run_id], create=False) as run_fd:
            record = json.loads(read_bytes_at(run_fd, RUN_RECORD_FILE, RUN_RECORD_LIMIT_BYTES).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return 0
    value = record.get(SEQUENCE_FIELD) if isinstance(record, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def run_order_key(results_dir: str, run_id: str) -> RunOrderKey:
    """A key that sorts runs oldest first: the opened sequence, then the id's UTC time (names the playbook gave), then
    the directory's modification time (other names)."""
    sequence = opened_sequence(results_dir, run_id)
    if _TIMESTAMPED_RUN_ID.match(run_id):
        return sequence, 1, run_id
    return sequence, 0, "%020.6f" % os.stat(os.path.join(results_dir, run_id)).st_mtime


def stored_run_ids(results_dir: str) -> List[str]:
    """The run directories of results_dir; links, odd names and ``latest`` (even a real directory of that name, which
    the store leaves alone) are not runs."""
    if not os.path.isdir(results_dir):
        return []
    with os.scandir(results_dir) as entries:
        return [entry.name for entry in entries
                if entry.name not in RESERVED_RUN_IDS and RUN_ID_PATTERN.match(entry.name) and entry.is_dir(follow_symlinks=False)]


def runs_newest_first(results_dir: str, before: Optional[str] = None) -> List[str]:
    """The stored runs, newest first; with ``before``, only the runs older than that one (all others when it is not
    stored)."""
    results_dir = os.path.abspath(results_dir)
    keys: Dict[str, RunOrderKey] = {name: run_order_key(results_dir, name) for name in stored_run_ids(results_dir)}
    current = keys.pop(before, None) if before is not None else None
    return sorted((name for name, key in keys.items() if current is None or key < current),
                  key=lambda name: keys[name], reverse=True)


def next_sequence(results_dir: str, run_id: str) -> int:
    """The number a fresh run_id gets: one past every stored run's (the caller holds the results directory's lock)."""
    return 1 + max((opened_sequence(results_dir, name) for name in stored_run_ids(results_dir) if name != run_id), default=0)


def id_time(run_id: str) -> Optional[str]:
    """The UTC time a playbook-named run id starts with, as YYYY-MM-DD HH:MM:SS; None for other names."""
    match = _TIMESTAMPED_RUN_ID.match(run_id)
    if not match:
        return None
    day, clock = match.groups()
    return "%s-%s-%s %s:%s:%s" % (day[:4], day[4:6], day[6:], clock[:2], clock[2:4], clock[4:])


def order_warnings(results_dir: str, run_id: str, earlier: Optional[Sequence[str]] = None) -> List[str]:
    """A sentence when the run was opened after a run whose id names a later time (the controller's clock was behind, or
    a run id was given by hand): the run is still ordered by when it was opened, and the sentence says so. earlier:
    runs_newest_first(results_dir, before=run_id), where the caller has listed them already."""
    named = id_time(run_id)
    if named is None:
        return []
    if earlier is None:
        earlier = runs_newest_first(results_dir, before=run_id)
    later_named = [name for name in earlier if (id_time(name) or "") > named]
    if not later_named:
        return []
    shown = ", ".join(later_named[:3]) + (" and %d more" % (len(later_named) - 3) if len(later_named) > 3 else "")
    return ["run %s's id names %s UTC, before run %s, which was opened before it: is the controller's clock behind (or "
            "was the run id given by hand)? Runs are ordered by when the controller opened them, so this run's earlier "
            "results are run %s's and the newest run is this one" % (run_id, named, shown, earlier[0])]
