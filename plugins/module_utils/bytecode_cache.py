# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The environment a probe runs in, and where its Python keeps the bytecode it compiles: a private cache of this user,
never beside the sources.

A host whose Python packages carry no compiled bytecode (installed with pip's --no-compile, or an image built with
PYTHONDONTWRITEBYTECODE) compiles torch from source in every process that imports it: 4.2 s for `import torch` and
10.5 s with inductor on the H200 rig, where an acceptance run starts about fifteen such processes. PYTHONPYCACHEPREFIX
sends every .pyc Python writes into one directory of ours, so the host's site-packages stay as they are and the first
process compiles for the others, in this run and the next. Where that directory cannot be made ours, nothing is
written (PYTHONDONTWRITEBYTECODE), as before.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import stat

CACHE_PARTS = ("gpufleet", "bytecode")


def cache_path(environ):
    """$XDG_CACHE_HOME/gpufleet/bytecode, else ~/.cache/gpufleet/bytecode; None without a home."""
    base = environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):
        home = environ.get("HOME") or os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, *CACHE_PARTS)


def private_directory(path):
    """'' when ``path`` is (or now is) a directory of this user that no one else can write; else why it is not used.
    Never follows a symlink at ``path``: a planted link would send the cache, and what Python executes from it, elsewhere."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        return "cannot be made: %s" % (exc.strerror or exc)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory (a symlink or a file)"
    if info.st_uid != os.getuid():
        return "belongs to uid %d, not to this user (%d)" % (info.st_uid, os.getuid())
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by others (mode %o)" % stat.S_IMODE(info.st_mode)
    return ""


def probe_environment(environ):
    """(the probe's environment: ``environ`` with PYTHONUNBUFFERED and the bytecode cache, or no bytecode written;
    why the cache is not used, '' when it is)."""
    env = dict(environ, PYTHONUNBUFFERED="1")
    path = cache_path(environ)
    why_not = "no home directory" if path is None else private_directory(path)
    if why_not:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env, "the bytecode cache %s %s" % (path or "", why_not)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = path
    return env, ""


def forget_bytecode_of(env, directory):
    """Remove what the cache holds for the sources under ``directory`` (a probe's work directory: a new path every
    run, whose bytecode would otherwise pile up run after run). The cache mirrors each source's absolute path."""
    prefix = env.get("PYTHONPYCACHEPREFIX")
    if not prefix or env.get("PYTHONDONTWRITEBYTECODE"):
        return
    mirrored = os.path.join(prefix, os.path.abspath(directory).lstrip(os.sep))
    if os.path.isdir(mirrored) and not os.path.islink(mirrored):
        shutil.rmtree(mirrored, ignore_errors=True)
