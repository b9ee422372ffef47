"""An executable stand-in for a host's Python: a one-line file whose shebang runs a script of this folder under the
controller's Python (the test fleet's hosts share the controller's file system). Standard library only."""
from __future__ import annotations

import os
import sys

SHEBANG_LIMIT = 250  # the kernel reads at most this much of an interpreter line (BINPRM_BUF_SIZE 256, less "#!")


def write_interpreter(folder, name: str, script: str, python: str | None = None) -> str:
    """Write <folder>/<name>, an executable whose shebang runs ``script`` with ``python`` (default: this Python); the
    script sees the file's path as its first argument."""
    folder = os.path.abspath(str(folder))
    words = [python or sys.executable, os.path.abspath(script)]
    shebang = "#!" + " ".join(words)
    if len(shebang) > SHEBANG_LIMIT or any(char.isspace() for word in words for char in word):
        raise ValueError("the interpreter line %r is too long for the kernel or has white space in a path" % shebang)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write(shebang + "\n")
    os.chmod(path, 0o755)
    return path
