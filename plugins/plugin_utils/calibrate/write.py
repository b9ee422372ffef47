"""Write a calibrated baseline into the user's folder: atomically, never through a link, never into the collection's
own baselines/, never over an existing file unless told to replace it."""
from __future__ import annotations

import errno
import os
import re
import secrets

from ..rules_and_baselines import default_baselines_dir
from ..store.safe_fs import NEW_FILE_FLAGS, entry_kind, open_root, write_bytes_at

SKU_FILE_SUFFIX = ".yaml"
SKU_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")  # schemas/baseline.schema.json's id pattern


class WriteRefused(ValueError):
    """The folder or the file is not one the calibration writes."""


def baseline_path(folder: str, sku: str) -> str:
    return os.path.join(os.path.abspath(folder), sku + SKU_FILE_SUFFIX)


def folder_problem(folder: str, sku: str) -> str:
    """Why no baseline of sku is written into folder ("" when one may be)."""
    if not SKU_ID.match(sku or ""):
        return "%r is not a baseline id (lower-case letters, digits and '-', e.g. h100-sxm)" % (sku,)
    folder = os.path.abspath(folder)
    if os.path.islink(folder):
        return "%s is a symbolic link (to %s): a baseline is not written through a link; name the folder itself" % (
            folder, os.readlink(folder))
    if os.path.lexists(folder) and not os.path.isdir(folder):
        return "%s is not a folder" % folder
    if os.path.isdir(default_baselines_dir()) and os.path.realpath(folder) == os.path.realpath(default_baselines_dir()):
        return ("%s is the collection's own baselines folder: calibrate into a folder of your own and judge with "
                "-e gpufleet_baselines_dir=<that folder>" % folder)
    return ""


def file_problem(kind: str, path: str, replace: bool) -> str:
    """Why the file (safe_fs.entry_kind's kind of it) is not written ("" when it may be)."""
    if kind not in ("missing", "file"):
        return "%s is a %s, not a baseline file: nothing was written" % (path, "symbolic link" if kind == "link" else kind)
    if kind == "file" and not replace:
        return "%s exists: nothing was written; move it away or replace it (gpufleet_calibrate_replace=true)" % path
    return ""


def write_problem(folder: str, sku: str, replace: bool = False) -> str:
    """What write_baseline would refuse now ("" when it would write): check mode says it without writing."""
    problem = folder_problem(folder, sku)
    if problem or not os.path.isdir(folder):
        return problem
    path = baseline_path(folder, sku)
    kind = "missing" if not os.path.lexists(path) else "link" if os.path.islink(path) else "file" if os.path.isfile(path) else "other"
    return file_problem(kind, path, replace)


def write_baseline(folder: str, sku: str, text: str, replace: bool = False) -> str:
    """The path written. The sku is a baseline id (the schema's pattern: no separator, no dot), so the file is a
    direct child of folder; WriteRefused says why nothing was written."""
    problem = folder_problem(folder, sku)
    if problem:
        raise WriteRefused(problem)
    name = sku + SKU_FILE_SUFFIX
    path = baseline_path(folder, sku)
    payload = text.encode("utf-8")
    with open_root(os.path.abspath(folder), create=True) as fd:
        problem = file_problem(entry_kind(fd, name), path, replace)
        if problem:
            raise WriteRefused(problem)
        if replace:
            write_bytes_at(fd, name, payload, shown=path)
        else:
            _write_new_at(fd, name, payload, path)
    return path


def _write_new_at(dir_fd: int, name: str, payload: bytes, shown: str) -> None:
    """name inside dir_fd written whole, or not at all when something took the name meanwhile (link(2) never replaces)."""
    temporary = ".tmp-%s-%s" % (name[:40], secrets.token_hex(6))
    fd = os.open(temporary, NEW_FILE_FLAGS, 0o644, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError as exc:
            raise WriteRefused("%s appeared while it was written: nothing was written over it" % shown) from exc
    finally:
        try:
            os.unlink(temporary, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise
