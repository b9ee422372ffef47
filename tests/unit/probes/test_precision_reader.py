"""The stdlib safetensors reader and writer on tiny files the tests write byte by byte."""
import json
import struct
import time

import pytest

from probe_packages.precision.safetensors_file import (
    SafetensorsError, check_readable, encode_header, read_header, read_tensor_bytes, unsupported_reason, write_file)


def raw_file(path, header, data, length=None):
    """A safetensors file written by hand: 8-byte little-endian length, the JSON header, the data."""
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded) if length is None else length) + encoded + data)
    return str(path)


F32_A = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
F16_B = struct.pack("<2e", 0.5, -2.0)


def two_tensor_file(tmp_path):
    header = {"__metadata__": {"format": "pt"},
              "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
              "b": {"dtype": "F16", "shape": [2], "data_offsets": [16, 20]}}
    return raw_file(tmp_path / "two.safetensors", header, F32_A + F16_B)


def test_header_and_one_tensor_by_offset(tmp_path):
    path = two_tensor_file(tmp_path)
    header = read_header(path)
    assert header.metadata == {"format": "pt"} and sorted(header.tensors) == ["a", "b"]
    entry = header.tensors["b"]
    assert (entry.dtype, entry.shape, entry.begin, entry.end, entry.numel, entry.nbytes) == ("F16", (2,), 16, 20, 2, 4)
    assert header.data_start == 8 + header.header_bytes and header.file_bytes == header.data_start + 20
    assert bytes(read_tensor_bytes(header, "b")) == F16_B
    assert struct.unpack("<4f", bytes(read_tensor_bytes(header, "a"))) == (1.0, 2.0, 3.0, 4.0)


def test_values_through_torch_for_every_supported_dtype(tmp_path):
    torch = pytest.importorskip("torch")
    from probe_packages.precision.run import load  # pylint: disable=import-outside-toplevel
    values = [1.0, -2.5, 0.125, 3.0]
    tensors = []
    for dtype, torch_dtype in (("F32", torch.float32), ("F16", torch.float16), ("BF16", torch.bfloat16)):
        raw = torch.tensor(values, dtype=torch_dtype).view(torch.uint8).numpy().tobytes()
        tensors.append((dtype.lower(), dtype, [2, 2], raw))
    path = str(tmp_path / "dtypes.safetensors")
    write_file(path, tensors, {})
    header = read_header(path)
    for name in ("f32", "f16", "bf16"):
        loaded = load(torch, header, name, torch.device("cpu"), 1 << 20)
        assert loaded.dtype == torch.float32 and loaded.shape == (2, 2)
        assert loaded.flatten().tolist() == values, name  # every value is exact in all three types


def test_reads_only_the_tensor_not_the_file(tmp_path):
    """A 512 MiB tensor left as a hole in a sparse file: the small tensor after it is read at once."""
    big = 512 << 20
    header = {"big": {"dtype": "U8", "shape": [big], "data_offsets": [0, big]},
              "small": {"dtype": "F32", "shape": [4], "data_offsets": [big, big + 16]}}
    encoded = json.dumps(header).encode()
    path = tmp_path / "sparse.safetensors"
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)) + encoded)
        handle.seek(8 + len(encoded) + big)
        handle.write(F32_A)
    started = time.perf_counter()
    parsed = read_header(str(path))
    assert bytes(read_tensor_bytes(parsed, "small")) == F32_A
    assert time.perf_counter() - started < 0.5


def test_written_files_round_trip_and_are_8_byte_aligned(tmp_path):
    path = str(tmp_path / "w.safetensors")
    write_file(path, [("x", "F32", [4], F32_A), ("y", "F16", [2], F16_B)], {"note": "hi"})
    header = read_header(path)
    assert header.header_bytes % 8 == 0 and header.metadata == {"note": "hi"}
    assert (header.tensors["y"].begin, header.tensors["y"].end) == (16, 20)
    assert bytes(read_tensor_bytes(header, "x")) == F32_A and bytes(read_tensor_bytes(header, "y")) == F16_B
    assert encode_header([], {})[:8] == struct.pack("<Q", 8)  # "{}" padded to 8 bytes


def test_the_safetensors_library_agrees(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    torch = pytest.importorskip("torch")
    path = str(tmp_path / "lib.safetensors")
    raw = torch.arange(6, dtype=torch.float32).view(torch.uint8).numpy().tobytes()
    write_file(path, [("m", "F32", [2, 3], raw)], {"format": "pt"})
    assert torch.equal(safetensors_torch.load_file(path)["m"], torch.arange(6, dtype=torch.float32).reshape(2, 3))
    other = str(tmp_path / "written_by_lib.safetensors")
    safetensors_torch.save_file({"z": torch.tensor([[1.5, -1.0]], dtype=torch.bfloat16)}, other)
    header = read_header(other)
    assert header.tensors["z"].dtype == "BF16" and header.tensors["z"].shape == (1, 2)
    assert bytes(read_tensor_bytes(header, "z")) == torch.tensor([1.5, -1.0], dtype=torch.bfloat16).view(torch.uint8).numpy().tobytes()


@pytest.mark.parametrize("header, data, length, message", [
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"", None, "outside the 0 data bytes"),
    ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8, None, "needs 12 bytes, the offsets span 8"),
    ({"a": {"dtype": "F32", "shape": [2]}}, b"\0" * 8, None, "lacks dtype, shape or data_offsets"),
    ({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8, None, "bad dtype"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, b"\0" * 8, None, "outside"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, 1 << 40, "does not fit the file"),
    ([1, 2], b"", None, "not a JSON object"),
])
def test_broken_headers_are_refused_with_the_reason(tmp_path, header, data, length, message):
    path = raw_file(tmp_path / "bad.safetensors", header, data, length)
    with pytest.raises(SafetensorsError, match=message):
        read_header(path)


def test_short_and_non_json_files(tmp_path):
    short = tmp_path / "short"
    short.write_bytes(b"\1\0")
    with pytest.raises(SafetensorsError, match="too short"):
        read_header(str(short))
    garbage = tmp_path / "garbage"
    garbage.write_bytes(struct.pack("<Q", 3) + b"{x}")
    with pytest.raises(SafetensorsError, match="not JSON"):
        read_header(str(garbage))


def test_unsupported_dtypes_missing_names_and_empty_tensors(tmp_path):
    assert unsupported_reason("F32") is None and unsupported_reason("BF16") is None
    assert "dtype I64 is not supported (only F32, F16, BF16): an integer or boolean tensor" in unsupported_reason("I64")
    assert "a format the probe does not convert" in unsupported_reason("F64")
    header = {"ids": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]},
              "none": {"dtype": "F32", "shape": [0, 4], "data_offsets": [16, 16]}}
    parsed = read_header(raw_file(tmp_path / "ints.safetensors", header, b"\0" * 16))
    with pytest.raises(SafetensorsError, match="I64 is not supported"):
        check_readable(parsed.tensors["ids"])
    with pytest.raises(SafetensorsError, match="is empty"):
        check_readable(parsed.tensors["none"])
    with pytest.raises(SafetensorsError, match="no tensor named 'nope'"):
        read_tensor_bytes(parsed, "nope")
