"""The collection's own folder, and its version: from galaxy.yml in a checkout or MANIFEST.json once installed."""
from __future__ import annotations

import json
import os
import re


def collection_root() -> str:
    """The collection's top folder (the one holding galaxy.yml or MANIFEST.json, probes/, schemas/ and plugins/)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def collection_version(root: str | None = None) -> str:
    root = root or collection_root()
    manifest = os.path.join(root, "MANIFEST.json")
    if os.path.isfile(manifest):
        with open(manifest, encoding="utf-8") as handle:
            return str(json.load(handle)["collection_info"]["version"])
    galaxy = os.path.join(root, "galaxy.yml")
    with open(galaxy, encoding="utf-8") as handle:
        match = re.search(r"^version:\s*['\"]?([^'\"\s]+)", handle.read(), re.MULTILINE)
    if not match:
        raise ValueError("galaxy.yml has no version line")
    return match.group(1)
