"""Copy some tensors of a safetensors file, byte for byte, into a new, smaller safetensors file.

A developer tool: the device machine takes at most 64 MiB per call and the all-MiniLM-L6-v2 checkpoint is 87 MB,
so the precision probe's GPU run reads a slice that holds only the tensors it measures:

    python3 tools/slice_safetensors.py SOURCE.safetensors OUT.safetensors --default [--tensor NAME ...]

--default adds the tensors the precision probe picks by its name rules (an embedding, an attention projection, an
MLP projection); --tensor adds a tensor by name (repeatable). The header is rebuilt with the offsets recomputed
(tensors keep the source's order); each tensor's bytes are copied unchanged, in chunks, never the whole file at
once. The source's metadata is kept and sliced_from (file name), sliced_from_sha256 and sliced_tensors (a JSON
list) are added. Prints a JSON summary. Exit status: 0 when written, 2 on a bad source or an unknown tensor name.
Standard library only (Python 3.9+); the reader is the probe's own (probes/probe_packages/precision).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Dict, List, Optional, Sequence

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probes"))

from probe_packages.precision.checkpoint import file_sha256  # noqa: E402  pylint: disable=wrong-import-position
from probe_packages.precision.safetensors_file import (  # noqa: E402  pylint: disable=wrong-import-position
    Header, SafetensorsError, encode_header, read_header)
from probe_packages.precision.selection import select  # noqa: E402  pylint: disable=wrong-import-position

CHUNK_BYTES = 8 << 20


def chosen_names(header: Header, names: Sequence[str], default: bool) -> List[str]:
    """The tensors to copy, in the source file's order; raises SafetensorsError for a name the file lacks."""
    wanted = list(names)
    if default:
        picks, unused_errors = select(header.tensors, [])
        wanted += [pick["name"] for pick in picks]
    missing = [name for name in wanted if name not in header.tensors]
    if missing:
        raise SafetensorsError("%s has no tensor named %s" % (header.path, ", ".join(repr(name) for name in missing)))
    if not wanted:
        raise SafetensorsError("no tensor chosen: give --tensor NAME or --default")
    return sorted(set(wanted), key=lambda name: (header.tensors[name].begin, name))


def slice_file(source: str, out: str, names: Sequence[str], default: bool = False) -> Dict[str, object]:
    """Write ``out`` with the chosen tensors of ``source``; returns the summary the command prints."""
    header = read_header(source)
    chosen = chosen_names(header, names, default)
    metadata = dict(header.metadata)
    metadata.update({"sliced_from": os.path.basename(source), "sliced_from_sha256": file_sha256(source),
                     "sliced_tensors": json.dumps(chosen)})
    entries = [header.tensors[name] for name in chosen]
    with open(source, "rb") as reader, open(out, "wb") as writer:
        writer.write(encode_header([(entry.name, entry.dtype, entry.shape, entry.nbytes) for entry in entries], metadata))
        for entry in entries:
            reader.seek(header.data_start + entry.begin)
            left = entry.nbytes
            while left:
                chunk = reader.read(min(left, CHUNK_BYTES))
                if not chunk:
                    raise SafetensorsError("%s ended inside tensor %r" % (source, entry.name))
                writer.write(chunk)
                left -= len(chunk)
    return {"source": source, "out": out, "tensors": chosen, "source_bytes": header.file_bytes,
            "out_bytes": os.path.getsize(out), "sliced_from_sha256": metadata["sliced_from_sha256"]}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="slice_safetensors.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("source", help="the safetensors file to copy from")
    parser.add_argument("out", help="the safetensors file to write")
    parser.add_argument("--tensor", action="append", default=[], metavar="NAME", help="a tensor to copy (repeatable)")
    parser.add_argument("--default", action="store_true", help="also copy the tensors the precision probe picks by name")
    args = parser.parse_args(argv)
    try:
        summary = slice_file(args.source, args.out, args.tensor, args.default)
    except (OSError, SafetensorsError) as exc:
        sys.stderr.write("slice_safetensors: %s\n" % exc)
        return 2
    json.dump(summary, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
