"""The one entry of the tools that write a generated file (tools/rules_list.py, profile_table.py, params_tables.py):
rewrite each file whose text differs from what its sources make, or, with --check, only say which differ (exit 1).

A tool hands its files as Generated(path, what, make): make(the file's text, "" where there is none) is the text the
file should hold, or ValueError where it cannot be made (a page without its markers); what names the file in --check.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, List, NamedTuple, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import write_text_atomically  # noqa: E402


class Generated(NamedTuple):
    path: str
    what: str  # "docs/rules.yaml", "README.md's profile table"
    make: Callable[[str], str]


def _text(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def stale(files: List[Generated], sources: str) -> List[str]:
    """A sentence for each file that differs from what its sources make, or whose text cannot be made."""
    found = []
    for generated in files:
        text = _text(generated.path)
        try:
            if generated.make(text or "") != text:
                found.append("%s differs from %s" % (generated.what, sources))
        except ValueError as exc:
            found.append("%s: %s" % (generated.what, exc))
    return found


def rewrite(files: List[Generated]) -> None:
    """Each file that differs, written anew (a temporary file renamed over it, never through a link)."""
    for generated in files:
        text = _text(generated.path)
        wanted = generated.make(text or "")
        if wanted != text:
            write_text_atomically(generated.path, wanted)


def main(argv: List[str], tool: str, doc: str, files: Callable[[], List[Generated]], sources: str) -> int:
    """A tool's command line: tool is its __file__, doc its __doc__, sources what its files are made from."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="only say which files differ from %s (exit 1)" % sources)
    if parser.parse_args(argv).check:
        found = stale(files(), sources)
        print("\n".join(found + ["run python %s" % os.path.relpath(tool, ROOT)]) if found else "nothing differs from %s" % sources)
        return 1 if found else 0
    rewrite(files())
    return 0
