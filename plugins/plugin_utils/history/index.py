# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run index of a results directory: <results>/.gpufleet-history.sqlite3 (docs/history.md), kept true to the runs
stored there.

update_index brings the index to what the results directory holds: a run whose directory is gone is dropped, a run whose
stored files changed since it was indexed (its report ran again, its act completed its outcomes) is read again, and a
run not yet indexed is added, each run in one transaction. The report calls it after writing a run's outputs; the
rebuild calls it with rebuild=True, which reads every run again. Both read a run's rows with rows.run_rows, so the same
files give the same index.

Concurrency: SQLite in WAL mode; every write is one BEGIN IMMEDIATE transaction, so writers (reports of slices judged
on one machine) take turns, waiting up to BUSY_TIMEOUT_S; readers never block them. A run's rows are read from its
files inside its transaction (fleet.json a host at a time, each batch of rows inserted as it is read, so no run is held
whole), and only where the index does not already hold the run from the same files when the lock is taken.

Never through a link: the index and its -wal and -shm are refused when any of them is a symbolic link (or not a regular
file), before SQLite opens them and again after.
"""
from __future__ import annotations

import errno
import os
import sqlite3
import stat
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..store.paths import HISTORY_INDEX_FILE, HISTORY_INDEX_SIDE_FILES, check_run_id
from ..store.run_order import stored_run_ids
from ..store.safe_fs import LinkRefused
from .rows import run_rows, source_of
from .schema import RUN_TABLES, SCHEMA_VERSION, create_statements, insert_statement

# How long a writer waits for another's transaction (a 10,000-host run's rows take seconds to write).
BUSY_TIMEOUT_S = 300.0
# A run whose files change while they are read is read again, at most this many times.
READ_ATTEMPTS = 3
# Rows inserted with one executemany (of any tables): what is held of a run's rows at a time.
INSERT_BATCH_ROWS = 1000


@dataclass
class IndexUpdate:
    """What one update did: runs indexed (added or read again), dropped (their directory is gone), left as they were,
    and why each run that could not be indexed was not (it is left out of the index, or keeps its earlier rows)."""

    path: str
    indexed: List[str] = field(default_factory=list)
    dropped: List[str] = field(default_factory=list)
    unchanged: int = 0
    rebuilt_schema: str = ""
    problems: List[str] = field(default_factory=list)


def index_path(results_dir: str) -> str:
    return os.path.join(os.path.abspath(results_dir), HISTORY_INDEX_FILE)


def refuse_links(path: str) -> None:
    """Raise LinkRefused when the index or its -wal or -shm is a symbolic link or not a regular file."""
    folder = os.path.dirname(path)
    for name in (os.path.basename(path),) + HISTORY_INDEX_SIDE_FILES:
        shown = os.path.join(folder, name)
        try:
            mode = os.lstat(shown).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise LinkRefused(errno.ELOOP, "%s is a symbolic link (to %s); the run index is never written through a link: remove "
                              "it, and the next report or playbooks/history.yml makes the index again" % (shown, os.readlink(shown)))
        if not stat.S_ISREG(mode):
            raise LinkRefused(errno.EINVAL, "%s is not a regular file; move it away, and the next report or playbooks/history.yml "
                              "makes the index again" % shown)


def connect(results_dir: str) -> sqlite3.Connection:
    """A connection to the results directory's index (made when absent), in WAL mode, writers waiting their turn."""
    path = index_path(results_dir)
    refuse_links(path)
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        connection.execute("PRAGMA busy_timeout = %d" % int(BUSY_TIMEOUT_S * 1000))
        if connection.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
            raise sqlite3.OperationalError("%s could not be put in WAL mode" % path)
        connection.execute("PRAGMA synchronous = NORMAL")
        refuse_links(path)
    except BaseException:
        connection.close()
        raise
    return connection


def open_index(results_dir: str) -> sqlite3.Connection:
    """A read-only connection (PRAGMA query_only) to the results directory's index; FileNotFoundError when there is none
    (never made here). Refused as connect refuses it: a link or not a regular file, before opening and after."""
    path = index_path(results_dir)
    refuse_links(path)
    if not os.path.isfile(path):
        raise FileNotFoundError("no run index at %s" % path)
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    connection.execute("PRAGMA query_only = ON")
    refuse_links(path)
    return connection


def _schema_version(connection: sqlite3.Connection) -> Optional[str]:
    names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in names:
        return None if not names else "unknown"
    row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return row[0] if row else "unknown"


def _ensure_schema(connection: sqlite3.Connection) -> str:
    """Make the schema where the index has none or another version's (every table of that one dropped, so nothing is
    misread). Returns the version replaced ("" when the schema was this version's, "none" for a new index)."""
    if _schema_version(connection) == SCHEMA_VERSION:
        return ""
    connection.execute("BEGIN IMMEDIATE")
    try:
        found = _schema_version(connection)
        if found == SCHEMA_VERSION:  # another writer made it meanwhile
            connection.execute("COMMIT")
            return ""
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            connection.execute('DROP TABLE "%s"' % table.replace('"', '""'))
        for statement in create_statements():
            connection.execute(statement)
        connection.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return found or "none"


def _indexed_sources(connection: sqlite3.Connection) -> Dict[str, str]:
    return dict(connection.execute("SELECT run_id, source FROM runs").fetchall())


def _drop_rows(connection: sqlite3.Connection, run_id: str) -> None:
    for table in RUN_TABLES:
        connection.execute("DELETE FROM %s WHERE run_id = ?" % table, (run_id,))


def _write_rows(connection: sqlite3.Connection, rows: Iterator[Tuple[str, Tuple[Any, ...]]]) -> None:
    """Insert the rows as they come, with executemany a batch of INSERT_BATCH_ROWS at a time."""
    batches: Dict[str, List[Tuple[Any, ...]]] = {table: [] for table in RUN_TABLES}
    held = 0
    for table, row in rows:
        batches[table].append(row)
        held += 1
        if held >= INSERT_BATCH_ROWS:
            _flush(connection, batches)
            held = 0
    _flush(connection, batches)


def _flush(connection: sqlite3.Connection, batches: Dict[str, List[Tuple[Any, ...]]]) -> None:
    for table in RUN_TABLES:
        if batches[table]:
            connection.executemany(insert_statement(table), batches[table])
            batches[table].clear()


def _index_run(connection: sqlite3.Connection, results_dir: str, run_id: str, again: bool) -> Tuple[Optional[bool], List[str]]:
    """Replace a stored run's rows in one transaction, read from its files while the lock is held (fleet.json a host at
    a time: the rows are inserted as they are read), unless the run is not judged yet, or the index already holds it
    from these very files (another writer was first) and again is false. The run is read again while its files'
    identity changes under the reading, at most READ_ATTEMPTS times. Returns (whether it wrote, None for a run no longer
    judged, problems)."""
    run_path = os.path.join(os.path.abspath(results_dir), run_id)
    for unused_attempt in range(READ_ATTEMPTS):
        connection.execute("BEGIN IMMEDIATE")
        try:
            source = source_of(run_path)
            held = connection.execute("SELECT source FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if source is None:  # no longer judged: the next update drops it
                connection.execute("COMMIT")
                return None, []
            if held is not None and held[0] == source and not again:
                connection.execute("COMMIT")
                return False, []
            _drop_rows(connection, run_id)
            problems: List[str] = []
            try:
                _write_rows(connection, run_rows(run_id, run_path, source, problems))
            except (OSError, ValueError) as exc:
                connection.execute("ROLLBACK")
                return False, ["run %s was not indexed: %s" % (run_id, exc)]
            if source_of(run_path) != source:
                connection.execute("ROLLBACK")
                continue
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        return True, ["run %s: %s" % (run_id, problem) for problem in problems]
    return False, ["run %s was not indexed: its files kept changing while they were read" % run_id]


def _drop_gone(connection: sqlite3.Connection, results_dir: str) -> List[str]:
    """Drop, in one transaction, every indexed run that is no longer a judged run of the results directory (its directory
    or its fleet.json is gone, or its directory became a link), looked at while the lock is held, so that a run another
    writer indexed meanwhile is kept; returns them."""
    top = os.path.abspath(results_dir)
    connection.execute("BEGIN IMMEDIATE")
    try:
        gone = []
        for run_id in sorted(_indexed_sources(connection)):
            path = os.path.join(top, run_id)
            if os.path.islink(path) or not os.path.isdir(path) or source_of(path) is None:
                _drop_rows(connection, run_id)
                gone.append(run_id)
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    return gone


def update_index(results_dir: str, rebuild: bool = False, run_id: Optional[str] = None) -> IndexUpdate:
    """Bring the index of results_dir to its stored runs (module docstring). rebuild: read every run again, whatever the
    index holds. run_id: the run the caller just wrote, checked to be a run id (its rows are read like any other's).
    Raises OSError (a link refused, the directory unwritable) or sqlite3.Error; a run that cannot be read is a problem
    in the answer (it keeps the rows it had, or has none), not a failure."""
    if run_id is not None:
        check_run_id(run_id)
    update = IndexUpdate(path=index_path(results_dir))
    connection = connect(results_dir)
    try:
        update.rebuilt_schema = _ensure_schema(connection)
        update.dropped = _drop_gone(connection, results_dir)
        held = _indexed_sources(connection)
        for stored_id in stored_run_ids(results_dir):
            source = source_of(os.path.join(os.path.abspath(results_dir), stored_id))
            if source is None or (not rebuild and held.get(stored_id) == source):
                update.unchanged += source is not None
                continue
            wrote, problems = _index_run(connection, results_dir, stored_id, rebuild)
            update.problems += problems
            if wrote:
                update.indexed.append(stored_id)
            elif wrote is not None and not problems:
                update.unchanged += 1
    finally:
        connection.close()
    return update


def rebuild_index(results_dir: str) -> IndexUpdate:
    """Read every stored run into the index again. An index file that is not an SQLite database (damaged, or something
    else under its name) is removed with its -wal and -shm first, and named in the answer's problems."""
    path = index_path(results_dir)
    try:
        return update_index(results_dir, rebuild=True)
    except sqlite3.DatabaseError as exc:
        if "not a database" not in str(exc) and "malformed" not in str(exc):
            raise
        refuse_links(path)
        for name in (path,) + tuple(os.path.join(os.path.dirname(path), side) for side in HISTORY_INDEX_SIDE_FILES):
            if os.path.exists(name):
                os.unlink(name)
        update = update_index(results_dir, rebuild=True)
        update.problems.insert(0, "%s was not a readable SQLite database (%s): it was removed and made again" % (path, exc))
        return update


def judged_run_ids(results_dir: str) -> List[str]:
    """The stored runs the index would hold: those with a fleet.json."""
    top = os.path.abspath(results_dir)
    return [run_id for run_id in stored_run_ids(results_dir) if source_of(os.path.join(top, run_id)) is not None]


def indexed_run_count(results_dir: str) -> int:
    connection = connect(results_dir)
    try:
        return connection.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        connection.close()
