"""The memory test's patterns: what each 64-bit word of the buffer holds in a given pass, written and regenerated on
the buffer's device with torch.

- walking_ones: word i holds one set bit, 1 << ((i + pass) mod 64): neighbouring words differ in one walking bit and
  every bit position of every word is set once in 64 passes;
- walking_zeros: the complement, one clear bit walking through set bits;
- address: word i holds its own byte offset in the buffer (address-in-address), complemented on odd passes so that
  every bit of every word toggles between two passes;
- random: seeded pseudo-random words, regenerated for the check from (seed, pass, chunk).

The walking patterns repeat every 64 words: they are written and compared as a broadcast of one 64-word tile (no copy
of the expected values); address and random are generated chunk by chunk into a scratch chunk for the check.
"""
from __future__ import annotations

from typing import Any, Optional

PATTERNS = ("walking_ones", "walking_zeros", "address", "random")
WORD_BYTES = 8
PERIOD_WORDS = 64
INT64_MIN = -(1 << 63)


def is_periodic(name: str) -> bool:
    return name in ("walking_ones", "walking_zeros")


def chunk_seed(seed: int, pass_index: int, chunk_index: int) -> int:
    """The generator seed of one chunk of one random pass: distinct for every (pass, chunk) below 2**20 of each."""
    return ((seed & 0x7FFFFF) << 40) ^ ((pass_index & 0xFFFFF) << 20) ^ (chunk_index & 0xFFFFF)


def walking_tile(torch: Any, name: str, pass_index: int, device: Any) -> Any:
    """The 64 words a walking pattern repeats: 1 << ((k + pass) mod 64), complemented for walking_zeros."""
    shifts = (torch.arange(PERIOD_WORDS, dtype=torch.int64, device=device) + pass_index) % PERIOD_WORDS
    tile = torch.bitwise_left_shift(torch.ones(PERIOD_WORDS, dtype=torch.int64, device=device), shifts)
    return torch.bitwise_not(tile) if name == "walking_zeros" else tile


class PatternSource:
    """Writes a pattern into (part of) a buffer and generates the words it expects there; ``generator`` is a
    torch.Generator on the buffer's device (random)."""

    def __init__(self, torch: Any, device: Any, seed: int) -> None:
        self.torch = torch
        self.device = device
        self.seed = seed
        self.generator = torch.Generator(device=device)
        self.tile: Optional[Any] = None

    def begin(self, name: str, pass_index: int) -> None:
        self.tile = walking_tile(self.torch, name, pass_index, self.device) if is_periodic(name) else None

    def fill(self, name: str, target: Any, start_word: int, pass_index: int, chunk_index: int) -> None:
        """Write into ``target`` (contiguous int64 words starting at word ``start_word`` of the buffer) what the
        pattern holds there; a walking pattern needs start_word and the length in whole tiles."""
        torch = self.torch
        if is_periodic(name):
            target.view(-1, PERIOD_WORDS).copy_(self.tile.expand(target.numel() // PERIOD_WORDS, PERIOD_WORDS))
        elif name == "address":
            first = start_word * WORD_BYTES
            torch.arange(first, first + target.numel() * WORD_BYTES, WORD_BYTES, dtype=torch.int64, out=target)
            if pass_index % 2:
                target.bitwise_not_()
        elif name == "random":
            self.generator.manual_seed(chunk_seed(self.seed, pass_index, chunk_index))
            target.random_(INT64_MIN, None, generator=self.generator)
        else:
            raise ValueError("unknown pattern %r (known: %s)" % (name, ", ".join(PATTERNS)))

    def mismatches(self, name: str, words: Any, scratch: Any, start_word: int, pass_index: int, chunk_index: int) -> Any:
        """A bool tensor, True where ``words`` (a chunk of the buffer) differs from what the pattern wrote there;
        ``scratch`` holds at least as many words (address and random regenerate into it)."""
        if is_periodic(name):
            return words.view(-1, PERIOD_WORDS).ne(self.tile).view(-1)
        expected = scratch[:words.numel()]
        self.fill(name, expected, start_word, pass_index, chunk_index)
        return words.ne(expected)

    def expected_word(self, name: str, scratch: Any, start_word: int, pass_index: int, chunk_index: int,
                      chunk_words: int, offset_in_chunk: int) -> int:
        """The one word the pattern wrote at ``offset_in_chunk`` words into the chunk (regenerated for a report)."""
        if is_periodic(name):
            return int(self.tile[(start_word + offset_in_chunk) % PERIOD_WORDS])
        expected = scratch[:chunk_words]
        self.fill(name, expected, start_word, pass_index, chunk_index)
        return int(expected[offset_in_chunk])


def hex_word(value: int) -> str:
    """A 64-bit word as 0x and 16 hex digits (two's complement for a negative int64)."""
    return "0x%016x" % (value & 0xFFFFFFFFFFFFFFFF)
