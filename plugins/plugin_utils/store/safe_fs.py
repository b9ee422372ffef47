"""Files below a root directory, reached without following a symbolic link at any step below the root.

The root (the results directory the user names) may itself be a link: that is the user's choice. Below it, every
directory is opened with O_NOFOLLOW | O_DIRECTORY relative to its parent's descriptor and every file is created with
O_EXCL | O_NOFOLLOW and renamed into place, so a link planted anywhere in the run's tree is refused, never written
through: rename replaces a link at the destination instead of following it. A file is read only when it is a regular
file no larger than the reader's bound: a FIFO, a device or a socket is refused before it is opened (and opened without
blocking, so one swapped in meanwhile is refused by its fstat instead of hanging the reader).
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from contextlib import contextmanager
from typing import BinaryIO, Iterable, Iterator, List, Optional, Tuple, Union

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
              | getattr(os, "O_NOCTTY", 0))
# What each kind of file that is not a regular file is called in a refusal.
_KIND_WORDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"))


class FileRefused(OSError):
    """The store refused a file or directory for what it is (a link, not a regular file, too large); its words say
    what and why, without Python's "[Errno N]" in front."""

    def __str__(self) -> str:
        return str(self.strerror)


class LinkRefused(FileRefused):
    """A symbolic link (or something that is not a directory) stands where the store needs a directory or file."""


def link_target_at(parent_fd: int, name: str) -> str:
    """Where the link name inside parent_fd points ("?" when it cannot be read), for a message; never followed."""
    try:
        return os.readlink(name, dir_fd=parent_fd)
    except OSError:
        return "?"


def _refuse(parent_fd: int, name: str, shown: str) -> LinkRefused:
    try:
        mode = os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode):
        return LinkRefused(errno.ELOOP, "%s is a symbolic link (to %s); the store never writes or reads through a link: "
                           "remove it" % (shown, link_target_at(parent_fd, name)))
    return LinkRefused(errno.ENOTDIR, "%s is not a directory; move it away" % shown)


def relative_parts(root: str, path: str) -> List[str]:
    """The components of path below root; ValueError when path is not strictly below it."""
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    parts = relative.split(os.sep)
    if relative in (".", "") or parts[0] == os.pardir or os.path.isabs(relative):
        raise ValueError("%s is not below %s" % (path, root))
    if any(part in ("", os.curdir, os.pardir) for part in parts):
        raise ValueError("%s has an empty, '.' or '..' component below %s" % (path, root))
    return parts


@contextmanager
def open_root(root: str, create: bool = True) -> Iterator[int]:
    """A descriptor of root (made with its parents when create); links in root's own path are followed."""
    if create:
        os.makedirs(root, exist_ok=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        yield fd
    finally:
        os.close(fd)


def open_dir_at(parent_fd: int, name: str, create: bool, shown: str) -> int:
    """A descriptor of the directory name inside parent_fd, never through a link; made when create."""
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=parent_fd)
        except FileExistsError:
            pass
    try:
        return os.open(name, DIRECTORY_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise _refuse(parent_fd, name, shown) from exc
        raise


@contextmanager
def open_dirs(root: str, parts: List[str], create: bool = True) -> Iterator[int]:
    """A descriptor of root/parts[0]/…, each step opened without following links."""
    with open_root(root, create=create) as root_fd:
        fd = os.dup(root_fd)
        try:
            shown = root
            for part in parts:
                shown = os.path.join(shown, part)
                child = open_dir_at(fd, part, create, shown)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)


def write_bytes_at(dir_fd: int, name: str, payload: Union[bytes, Iterable[bytes]], mode: int = 0o644,
                   shown: Optional[str] = None, durable: bool = True) -> None:
    """Write name inside dir_fd atomically: a fresh temporary file (never a link), fsync, rename over the old name.

    payload: the bytes, or chunks of them (a large export written as it is made, never whole in memory); a chunk
    that raises leaves the old file as it was. durable=False leaves out the fsync, for a file that can be made again
    from what is stored (a host's pages): still never seen half written, but a crash of the machine may lose it."""
    temporary = ".tmp-%s-%s" % (name[:40], secrets.token_hex(6))
    fd = os.open(temporary, NEW_FILE_FLAGS, mode, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(payload, (bytes, bytearray)):
                handle.write(payload)
            else:
                for chunk in payload:
                    handle.write(chunk)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        existing = _lstat_at(dir_fd, name)
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(errno.EISDIR, "%s is a directory; move it away" % (shown or name))
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def write_bytes_below(root: str, path: str, payload: Union[bytes, Iterable[bytes]], mode: int = 0o644,
                      durable: bool = True) -> None:
    """Write path (below root) atomically, making its directories, following no link below root."""
    parts = relative_parts(root, path)
    with open_dirs(root, parts[:-1]) as dir_fd:
        write_bytes_at(dir_fd, parts[-1], payload, mode, shown=path, durable=durable)


def read_bytes_at(dir_fd: int, name: str, limit: int, shown: Optional[str] = None) -> bytes:
    """The bytes of the regular file name inside dir_fd (never through a link); OSError when over limit bytes."""
    return read_file_at(dir_fd, name, limit, shown)[0]


def kind_words(mode: int) -> str:
    """What a file of this mode is, in words ("a FIFO (named pipe)", "a regular file" ...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((words for is_kind, words in _KIND_WORDS if is_kind(mode)), "a file of type %o" % stat.S_IFMT(mode))


def not_a_regular_file(mode: int, shown: str) -> FileRefused:
    """The refusal of a file that is not a regular file, naming what it is."""
    return FileRefused(errno.EINVAL, "%s is %s, not a regular file: the store writes only regular files, so something else "
                       "put it there; it is not read: move it away" % (shown, kind_words(mode)))


def open_regular_at(dir_fd: int, name: str, limit: int, shown: Optional[str] = None) -> BinaryIO:
    """name inside dir_fd opened for reading in binary, never blocking: a link is refused (O_NOFOLLOW), anything but a
    regular file is refused by its lstat before it is opened (opening a device can act on it) and by its fstat after
    (O_NONBLOCK: a FIFO swapped in between opens at once), a file larger than limit by its size before a byte is read
    (a sparse file of 2 GiB reads nothing). The caller closes it."""
    shown = shown or name
    found = _lstat_at(dir_fd, name)
    if found is not None and stat.S_ISLNK(found.st_mode):
        raise _refuse(dir_fd, name, shown)
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise not_a_regular_file(found.st_mode, shown)
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise _refuse(dir_fd, name, shown) from exc
        raise
    handle = os.fdopen(fd, "rb")
    try:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise not_a_regular_file(info.st_mode, shown)
        if info.st_size > limit:
            raise FileRefused(errno.EFBIG, "%s is %d bytes, over the %d-byte limit for a stored result; it is not read"
                              % (shown, info.st_size, limit))
    except BaseException:
        handle.close()
        raise
    return handle


def read_file_at(dir_fd: int, name: str, limit: int, shown: Optional[str] = None) -> Tuple[bytes, Tuple[int, ...]]:
    """read_bytes_at, and the identity of the file it read (device, inode, size, modification time in ns), taken from
    the open file: a later read of the same name can tell whether the file was replaced in between.

    Never blocks and never reads more than limit + 1 bytes (open_regular_at), a file that grows past limit while read
    refused by what was read."""
    shown = shown or name
    with open_regular_at(dir_fd, name, limit, shown) as handle:
        info = os.fstat(handle.fileno())
        payload = handle.read(limit + 1)
        if len(payload) > limit:
            raise FileRefused(errno.EFBIG, "%s grew past the %d-byte limit for a stored result while it was read; it is "
                              "not used" % (shown, limit))
        return payload, (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


def _lstat_at(dir_fd: int, name: str) -> Optional[os.stat_result]:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def entry_kind(dir_fd: int, name: str) -> str:
    """'dir', 'file', 'link', 'missing' or 'other' for name inside dir_fd, without following it."""
    info = _lstat_at(dir_fd, name)
    if info is None:
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        return "link"
    if stat.S_ISDIR(info.st_mode):
        return "dir"
    if stat.S_ISREG(info.st_mode):
        return "file"
    return "other"
