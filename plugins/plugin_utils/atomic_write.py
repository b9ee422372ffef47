"""Write a file so that a reader sees the old content or the new, never half of it."""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any


def write_bytes_atomically(path: str, payload: bytes, mode: int = 0o644) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp_path = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_path, mode)
        os.replace(tmp_path, path)
    except BaseException:
        try:
            os.unlink(tmp_path)
        except OSError:
            pass
        raise


def write_text_atomically(path: str, text: str) -> None:
    write_bytes_atomically(path, text.encode("utf-8"))


def write_json_atomically(path: str, document: Any) -> None:
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False, default=str)
    write_text_atomically(path, text + "\n")
