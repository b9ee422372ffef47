"""Read and write the safetensors format with the standard library alone, one tensor at a time.

A safetensors file is an 8-byte little-endian header length N, N bytes of JSON (name -> {"dtype", "shape",
"data_offsets": [begin, end]} plus an optional "__metadata__" of strings), then the data; offsets count from the
first byte after the header. Reading a tensor seeks to its bytes and reads only those, never the whole file.
"""
from __future__ import annotations

import json
import os
import struct
import sys
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

MAX_HEADER_BYTES = 100 * 1000 * 1000  # the limit the safetensors library itself enforces
ITEM_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "I64": 8, "I32": 4, "I16": 2,
              "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}
SUPPORTED_DTYPES = ("F32", "F16", "BF16")
METADATA_KEY = "__metadata__"


class SafetensorsError(ValueError):
    """The file is not a readable safetensors file (or a tensor of it cannot be read as asked)."""


@dataclass(frozen=True)
class TensorEntry:
    name: str
    dtype: str
    shape: Tuple[int, ...]
    begin: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin

    @property
    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count


@dataclass
class Header:
    path: str
    header_bytes: int
    data_start: int
    file_bytes: int
    tensors: Dict[str, TensorEntry]
    metadata: Dict[str, str] = field(default_factory=dict)


def unsupported_reason(dtype: str) -> Optional[str]:
    """None when the probe can measure ``dtype``, else why not (one sentence)."""
    if dtype in SUPPORTED_DTYPES:
        return None
    kind = "an integer or boolean tensor" if dtype[0] in "IUB" else "a format the probe does not convert"
    return ("dtype %s is not supported (only %s): %s has no floating-point reference to measure representation error "
            "against" % (dtype, ", ".join(SUPPORTED_DTYPES), kind))


def read_header(path: str) -> Header:
    """Parse the header of ``path`` and check every entry's offsets against the file; reads N + 8 bytes only."""
    file_bytes = os.path.getsize(path)
    with open(path, "rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise SafetensorsError("%s holds %d bytes: too short for the 8-byte header length" % (path, len(prefix)))
        header_bytes = struct.unpack("<Q", prefix)[0]
        if header_bytes > MAX_HEADER_BYTES or header_bytes > file_bytes - 8:
            raise SafetensorsError("%s: header length %d does not fit the file (%d bytes) or exceeds %d bytes"
                                   % (path, header_bytes, file_bytes, MAX_HEADER_BYTES))
        raw = handle.read(header_bytes)
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SafetensorsError("%s: the header is not JSON: %s" % (path, exc)) from exc
    if not isinstance(document, dict):
        raise SafetensorsError("%s: the header is not a JSON object" % path)
    data_start = 8 + header_bytes
    metadata = document.pop(METADATA_KEY, None) or {}
    if not isinstance(metadata, dict):
        raise SafetensorsError("%s: %s is not an object" % (path, METADATA_KEY))
    tensors = {name: _entry(path, name, value, file_bytes - data_start) for name, value in document.items()}
    return Header(path, header_bytes, data_start, file_bytes, tensors, {str(k): str(v) for k, v in metadata.items()})


def _entry(path: str, name: str, value: object, data_bytes: int) -> TensorEntry:
    where = "%s: tensor %r" % (path, name)
    if not isinstance(value, dict) or not {"dtype", "shape", "data_offsets"} <= set(value):
        raise SafetensorsError("%s lacks dtype, shape or data_offsets" % where)
    dtype, shape, offsets = value["dtype"], value["shape"], value["data_offsets"]
    if not isinstance(dtype, str) or not isinstance(shape, list) or not all(_natural(size) for size in shape):
        raise SafetensorsError("%s: bad dtype %r or shape %r" % (where, dtype, shape))
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(_natural(offset) for offset in offsets):
        raise SafetensorsError("%s: bad data_offsets %r" % (where, offsets))
    begin, end = offsets
    if not begin <= end <= data_bytes:
        raise SafetensorsError("%s: data_offsets [%d, %d] outside the %d data bytes" % (where, begin, end, data_bytes))
    entry = TensorEntry(name, dtype, tuple(shape), begin, end)
    if dtype in ITEM_BYTES and entry.numel * ITEM_BYTES[dtype] != entry.nbytes:
        raise SafetensorsError("%s: shape %s of %s needs %d bytes, the offsets span %d"
                               % (where, list(shape), dtype, entry.numel * ITEM_BYTES[dtype], entry.nbytes))
    return entry


def _natural(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read_tensor_bytes(header: Header, name: str) -> bytearray:
    """The raw little-endian bytes of one tensor: a seek to its offset and one read of its length."""
    if name not in header.tensors:
        raise SafetensorsError("%s has no tensor named %r" % (header.path, name))
    entry = header.tensors[name]
    buffer = bytearray(entry.nbytes)
    with open(header.path, "rb") as handle:
        handle.seek(header.data_start + entry.begin)
        got = handle.readinto(buffer)
    if got != entry.nbytes:
        raise SafetensorsError("%s: tensor %r: read %d of %d bytes" % (header.path, name, got, entry.nbytes))
    return buffer


def check_readable(entry: TensorEntry) -> None:
    """Raise SafetensorsError when the probe cannot turn this tensor into numbers here."""
    reason = unsupported_reason(entry.dtype)
    if reason:
        raise SafetensorsError(reason)
    if entry.numel == 0:
        raise SafetensorsError("tensor %r is empty (shape %s)" % (entry.name, list(entry.shape)))
    if sys.byteorder != "little":
        raise SafetensorsError("this host is big-endian; safetensors data is little-endian and is not byte-swapped here")


def encode_header(entries: Sequence[Tuple[str, str, Sequence[int], int]], metadata: Dict[str, str]) -> bytes:
    """The length prefix and JSON header for (name, dtype, shape, nbytes) laid out back to back in this order.

    The JSON is padded with spaces to a multiple of 8 bytes, as the safetensors library writes it.
    """
    document: Dict[str, object] = {}
    if metadata:
        document[METADATA_KEY] = {str(key): str(value) for key, value in metadata.items()}
    offset = 0
    for name, dtype, shape, nbytes in entries:
        document[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(document, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def write_file(path: str, tensors: Iterable[Tuple[str, str, Sequence[int], bytes]], metadata: Dict[str, str]) -> None:
    """Write (name, dtype, shape, raw bytes) tensors as a safetensors file, in the given order."""
    items: List[Tuple[str, str, Sequence[int], bytes]] = list(tensors)
    with open(path, "wb") as handle:
        handle.write(encode_header([(name, dtype, shape, len(raw)) for name, dtype, shape, raw in items], metadata))
        for unused_name, unused_dtype, unused_shape, raw in items:
            handle.write(raw)
