"""Which checkpoint to read: the param's path, else the slice of all-MiniLM-L6-v2 the collection ships beside this file.

The shipped slice (data/, made by tools/make_precision_slice.py) travels in the precision probe's archive and is
unpacked with it, so it is a plain file next to this module on the host; its manifest gives its sha256, which is
checked before the file is read.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

SHIPPED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
SHIPPED_MANIFEST = "minilm_l6_v2_slice.json"
SHIPPED_SHOWN = "probe_packages/precision/data"  # where the slice lies in the probe's archive, and under probes/ in the collection
MANIFEST_KEYS = ("file", "size_bytes", "sha256", "model", "model_url", "licence", "licence_evidence", "licence_file",
                 "notice_file", "taken_from", "tensors", "made_by")
CHUNK_BYTES = 8 << 20


class CheckpointError(Exception):
    """No checkpoint that may be read here; the message says why and what to do."""


@dataclass(frozen=True)
class Checkpoint:
    path: str
    source: str  # "shipped" or "param"
    sha256: str
    shipped: Optional[Dict[str, Any]] = None  # the shipped slice's manifest


def file_sha256(path: str) -> str:
    """sha256 of the whole file, read in 8 MiB chunks (never held in memory at once)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def resolve(checkpoint: str, shipped_dir: str = SHIPPED_DIR) -> Checkpoint:
    """The param's file when given (it wins), else the shipped slice, its sha256 checked; raises CheckpointError."""
    if checkpoint:
        path = os.path.abspath(os.path.expanduser(checkpoint))
        if not os.path.isfile(path):
            raise CheckpointError("checkpoint %s is not a file on this host" % path)
        return Checkpoint(path, "param", file_sha256(path))
    manifest = shipped_manifest(shipped_dir)
    path = os.path.join(shipped_dir, manifest["file"])
    where = "%s/%s" % (SHIPPED_SHOWN, manifest["file"])
    if os.path.islink(path) or not os.path.isfile(path):
        raise CheckpointError("the shipped checkpoint slice %s is missing from the probe's files (%s): the collection is "
                              "incomplete; reinstall it, or set the checkpoint parameter to a .safetensors file" % (where, path))
    sha256 = file_sha256(path)
    if sha256 != manifest["sha256"]:
        raise CheckpointError("the shipped checkpoint slice %s has sha256 %s, but its manifest %s says %s: the file was "
                              "altered or damaged; reinstall the collection (tools/make_precision_slice.py remakes it), "
                              "or set the checkpoint parameter to a .safetensors file"
                              % (where, sha256, SHIPPED_MANIFEST, manifest["sha256"]))
    return Checkpoint(path, "shipped", sha256, manifest)


def shipped_manifest(shipped_dir: str = SHIPPED_DIR) -> Dict[str, Any]:
    """The shipped slice's manifest, its keys checked; raises CheckpointError when it is missing or not one."""
    path = os.path.join(shipped_dir, SHIPPED_MANIFEST)
    try:
        with open(path, encoding="utf-8") as handle:
            manifest = json.load(handle)
    except (OSError, ValueError) as exc:
        raise CheckpointError("the shipped checkpoint slice's manifest %s/%s cannot be read (%s): the collection is "
                              "incomplete; reinstall it, or set the checkpoint parameter to a .safetensors file"
                              % (SHIPPED_SHOWN, SHIPPED_MANIFEST, exc)) from exc
    missing = [key for key in MANIFEST_KEYS if not isinstance(manifest, dict) or key not in manifest]
    if missing or os.path.basename(str(manifest["file"])) != manifest["file"]:
        raise CheckpointError("the shipped checkpoint slice's manifest %s/%s is damaged (%s); reinstall the collection"
                              % (SHIPPED_SHOWN, SHIPPED_MANIFEST, "lacks " + ", ".join(missing) if missing
                                 else "its file is not a plain name"))
    return manifest


def rows_sentence(tensors: Sequence[Dict[str, Any]]) -> str:
    """Which rows of which tensors a slice kept, from its manifest's tensors (rows: start, stop, step, plus extra rows)."""
    parts = []
    for tensor in tensors:
        rows = tensor["rows"]
        if tensor["shape"] == tensor["source_shape"]:
            parts.append("%s whole" % tensor["name"])
            continue
        strided = range(rows["start"], rows["stop"], rows["step"])
        shown = [str(row) for row in strided] if len(strided) <= 3 else [str(strided[0]), str(strided[1]), "...", str(strided[-1])]
        plus = " and %s" % ", ".join(str(row) for row in rows["plus"]) if rows["plus"] else ""
        parts.append("%s rows %s%s (%d of %d)" % (tensor["name"], ", ".join(shown), plus, tensor["shape"][0],
                                                  tensor["source_shape"][0]))
    return "; ".join(parts)


def description(checkpoint: Checkpoint) -> str:
    """One sentence saying which checkpoint was read and why it is the one."""
    if checkpoint.shipped is None:
        return "the file the checkpoint parameter names (%s), sha256 %s" % (checkpoint.path, checkpoint.sha256)
    manifest = checkpoint.shipped
    taken = manifest["taken_from"]
    return ("the collection's shipped slice %s/%s (no checkpoint parameter given; sha256 %s, as its manifest says): %d "
            "tensors of %s (%s, %s), from %s %s's %s (sha256 %s): %s"
            % (SHIPPED_SHOWN, manifest["file"], checkpoint.sha256, len(manifest["tensors"]), manifest["model"],
               manifest["licence"], manifest["model_url"], taken["package"], taken["version"], taken["file"],
               taken["sha256"], rows_sentence(manifest["tensors"])))


def describe(checkpoint: Checkpoint, header: Any, metadata_limit: int = 16) -> Dict[str, Any]:
    """The checkpoint's identity for the result: path, where it came from, size, sha256, header facts."""
    metadata = dict(sorted(header.metadata.items())[:metadata_limit])
    described = {
        "path": checkpoint.path,
        "source": checkpoint.source,
        "description": description(checkpoint),
        "size_bytes": header.file_bytes,
        "sha256": checkpoint.sha256,
        "header_bytes": header.header_bytes,
        "tensor_count": len(header.tensors),
        "metadata": {key: value[:200] for key, value in metadata.items()},
    }
    if checkpoint.shipped is not None:
        described["shipped"] = checkpoint.shipped
    return described
