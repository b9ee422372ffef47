"""One pass of one pattern over a worker's buffer: write it, check it chunk by chunk on the device (the mismatches of
each chunk counted there, one copy of the counts to the host per pass), and find where the errors lie.

A chunk with errors is read again for its first and last wrong word and the first word's expected and found values:
only those chunks, only those words, ever reach the host.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

from probe_packages.memtest.patterns import WORD_BYTES, PatternSource, hex_word


class BufferTest:
    """A buffer of ``buffer_words`` int64 words on the device, checked in chunks of ``chunk_words`` words."""

    def __init__(self, torch: Any, device: Dict[str, Any], buffer_words: int, chunk_words: int, seed: int) -> None:
        self.torch = torch
        self.device = device
        where = device["torch_device"]
        self.buffer = torch.empty(buffer_words, dtype=torch.int64, device=where)
        self.scratch = torch.empty(min(chunk_words, buffer_words), dtype=torch.int64, device=where)
        self.chunk_words = chunk_words
        self.chunks = [(start, min(start + chunk_words, buffer_words)) for start in range(0, buffer_words, chunk_words)]
        self.counts = torch.zeros(len(self.chunks), dtype=torch.int64, device=where)
        self.source = PatternSource(torch, where, seed)

    @property
    def buffer_bytes(self) -> int:
        return self.buffer.numel() * WORD_BYTES

    def address(self) -> int:
        return int(self.buffer.data_ptr())

    def synchronize(self) -> None:
        if self.device["kind"] == "cuda":
            self.torch.cuda.synchronize(self.device["index"])

    def write(self, name: str, pass_index: int) -> None:
        self.source.begin(name, pass_index)
        for chunk_index, (start, end) in enumerate(self.chunks):
            self.source.fill(name, self.buffer[start:end], start, pass_index, chunk_index)

    def flip_bit(self, offset_bytes: int, bit: int) -> int:
        """Flip one bit of the byte at offset_bytes (the test aid); returns the word's byte offset."""
        as_bytes = self.buffer.view(self.torch.uint8)
        as_bytes[offset_bytes:offset_bytes + 1].bitwise_xor_(1 << bit)
        return offset_bytes - offset_bytes % WORD_BYTES

    def check(self, name: str, pass_index: int) -> List[int]:
        """The number of wrong words in each chunk (one copy of the counts to the host)."""
        for chunk_index, (start, end) in enumerate(self.chunks):
            wrong = self.source.mismatches(name, self.buffer[start:end], self.scratch, start, pass_index, chunk_index)
            self.counts[chunk_index] = self.torch.count_nonzero(wrong)
        return [int(value) for value in self.counts.tolist()]

    def where_wrong(self, name: str, pass_index: int, chunk_index: int, count: int) -> Dict[str, Any]:
        """The error range of one chunk: its byte range, the first and last wrong word, expected and found."""
        start, end = self.chunks[chunk_index]
        words = self.buffer[start:end]
        wrong = self.source.mismatches(name, words, self.scratch, start, pass_index, chunk_index)
        positions = self.torch.nonzero(wrong).view(-1)
        first, last = int(positions[0]), int(positions[-1])
        found = int(words[first])
        expected = self.source.expected_word(name, self.scratch, start, pass_index, chunk_index, end - start, first)
        return {
            "pattern": name, "pass": pass_index, "errors": count,
            "chunk_bytes": [start * WORD_BYTES, end * WORD_BYTES],
            "error_bytes": [(start + first) * WORD_BYTES, (start + last + 1) * WORD_BYTES],
            "first_expected": hex_word(expected), "first_found": hex_word(found),
            "first_differing_bits": hex_word(expected ^ found),
        }

    def release(self) -> None:
        self.buffer = self.scratch = self.counts = None
        if self.device["kind"] == "cuda":
            self.torch.cuda.synchronize(self.device["index"])
            self.torch.cuda.empty_cache()


def run_pass(test: BufferTest, name: str, pass_index: int, inject: Optional[Dict[str, Any]], ranges_left: int) -> Dict[str, Any]:
    """Write the pattern, flip the injected bit where one is asked for this pass, check; the pass's record (its error
    ranges: at most ranges_left of them, the rest counted)."""
    began = time.perf_counter()
    test.write(name, pass_index)
    injected = None
    if inject is not None:
        test.synchronize()
        injected = {"pattern": name, "pass": pass_index, "offset_bytes": inject["offset_bytes"], "bit": inject["bit"],
                    "word_offset_bytes": test.flip_bit(inject["offset_bytes"], inject["bit"])}
    counts = test.check(name, pass_index)
    seconds = time.perf_counter() - began
    bad = [(index, count) for index, count in enumerate(counts) if count]
    ranges = [test.where_wrong(name, pass_index, index, count) for index, count in bad[:max(0, ranges_left)]]
    return {"pattern": name, "pass": pass_index, "seconds": seconds, "errors": sum(counts), "ranges": ranges,
            "ranges_left_out": len(bad) - len(ranges), "injected": injected}
