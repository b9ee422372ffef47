"""Write a file so that a reader sees the old content or the new, never half of it, and never through a link.

With ``root`` (the results directory), every component of the path below it is reached without following a link
(plugins/plugin_utils/store/safe_fs.py); the store always passes it.
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterable, Optional, Union

from .paths import HOST_REPORT_FILES
from .safe_fs import write_bytes_below


Text = Union[str, Iterable[str]]  # a text, or its chunks in order (a large export, written as it is made)


def write_bytes_atomically(path: str, payload: Union[bytes, Iterable[bytes]], mode: int = 0o644,
                           root: Optional[str] = None, durable: bool = True) -> None:
    path = os.path.abspath(path)
    write_bytes_below(root or os.path.dirname(path), path, payload, mode, durable=durable)


def write_text_atomically(path: str, text: Text, root: Optional[str] = None, durable: bool = True) -> None:
    # A lone surrogate cannot be UTF-8: it is written as its escape, not lost and not a crash.
    if isinstance(text, str):
        write_bytes_atomically(path, text.encode("utf-8", "backslashreplace"), root=root, durable=durable)
    else:
        write_bytes_atomically(path, (chunk.encode("utf-8", "backslashreplace") for chunk in text), root=root, durable=durable)


def json_text(document: Any) -> str:
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON's own \uXXXX escape keeps it exactly
        text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=True, allow_nan=False, default=str)
    return text + "\n"


def write_json_atomically(path: str, document: Any, root: Optional[str] = None) -> None:
    write_text_atomically(path, json_text(document), root=root)


def text_writer_below(root: str) -> Callable[[str, Text], None]:
    """A write(path, text) callback for the renderers that writes only below root and through no link. A host's pages
    (HOST_REPORT_FILES) are written without fsync: playbooks/report.yml renders them again from the stored results,
    and a sync per page was most of a large fleet's report time (docs/scale.md); the fleet's files and the outcomes
    that acting reads are synced."""
    def write(path: str, text: Text) -> None:
        write_text_atomically(path, text, root=root, durable=os.path.basename(path) not in HOST_REPORT_FILES)
    return write
