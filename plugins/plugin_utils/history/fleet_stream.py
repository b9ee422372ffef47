# -*- coding: utf-8 -*-
# Copyright: gpufleet.validation contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet.json read a host at a time: the run index never holds a whole run's fleet.json (some 750 MB at 10,000 hosts of
8 GPUs, gigabytes as Python objects), only the host entry it is reading and a buffer of the file.

The document is an object; each of its members is decoded whole (json.JSONDecoder.raw_decode over a buffer refilled
from the file), except "hosts", an object whose members, one per host, are decoded and handed on one at a time. Any
whitespace between tokens is read, as JSON allows; a duplicate key, NaN or Infinity is refused as strict_json refuses
them; anything that is not such a document (cut short, garbage, hosts not an object) raises ValueError saying where.
"""
from __future__ import annotations

import codecs
import json
from typing import Any, BinaryIO, Iterator, Optional, Set, Tuple

from ...module_utils.strict_json import strict_decoder

HOSTS_MEMBER = "hosts"
# Bytes read from the file at a time; a value longer than the buffer makes it read on, doubling what it holds each time.
CHUNK_BYTES = 1 << 18
_WHITESPACE = " \t\n\r"
# How near the buffer's end a value or an error must be for more of the file to change it: the longest token that can
# be cut there ("false", a "\uXXXX" escape), longer than a number's cut tail ("1e+" of "1e+5" reads as 1).
_LONGEST_CUT_TOKEN = 6


class _Reader:
    """The text of a binary file, decoded as UTF-8, held from the position reached to as far as was read."""

    def __init__(self, handle: BinaryIO, shown: str, chunk_bytes: int) -> None:
        self.handle, self.shown, self.chunk_bytes = handle, shown, chunk_bytes
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.json = strict_decoder()
        self.text, self.position, self.offset, self.ended = "", 0, 0, False

    def fail(self, what: str, position: Optional[int] = None) -> ValueError:
        where = self.offset + (self.position if position is None else position)
        return ValueError("%s is not a judged run's fleet.json: %s at character %d" % (self.shown, what, where))

    def _more(self) -> bool:
        """Read a chunk more into the buffer (the part already read dropped, positions moved with it); False, and the
        buffer left as it was, at the end of the file."""
        if self.ended:
            return False
        data = self.handle.read(max(self.chunk_bytes, len(self.text) - self.position))
        self.ended = not data
        try:
            added = self.decoder.decode(data, final=self.ended)
        except UnicodeDecodeError as exc:
            raise self.fail("it is not UTF-8 (%s)" % exc.reason) from exc
        if self.ended:  # the decoder, told the end, gives what it held back or raises: nothing is added
            return False
        self.offset += self.position
        self.text, self.position = self.text[self.position:] + added, 0
        return True

    def next_char(self) -> str:
        """The next character that is not whitespace, not consumed; "" at the end of the file."""
        while True:
            text, position = self.text, self.position
            while position < len(text) and text[position] in _WHITESPACE:
                position += 1
            self.position = position
            if position < len(text):
                return text[position]
            if not self._more():
                return ""

    def expect(self, char: str) -> None:
        found = self.next_char()
        if found != char:
            raise self.fail("%s expected, %s found" % (json.dumps(char), json.dumps(found) if found else "the end of the file"))
        self.position += 1

    def value(self) -> Any:
        """The JSON value that starts at the next character, consumed. A value that ends near where the buffer ends is
        read again with more of the file (a number cut at "1e" reads as 1)."""
        if not self.next_char():
            raise self.fail("a value expected, the end of the file found")
        while True:
            try:
                found, end = self.json.raw_decode(self.text, self.position)
            except RecursionError as exc:
                raise self.fail("it is nested deeper than this Python can parse") from exc
            except json.JSONDecodeError as exc:
                if not self._conclusive(exc) and self._more():
                    continue
                cut = "" if self._conclusive(exc) else " (at the end of what the file holds: it is cut short)"
                raise self.fail(exc.msg + cut, exc.pos) from exc
            except ValueError as exc:  # strict_json: a duplicate key, NaN or Infinity
                raise self.fail(str(exc)) from exc
            if end + _LONGEST_CUT_TOKEN < len(self.text) or not self._more():
                self.position = end
                return found

    def _conclusive(self, error: json.JSONDecodeError) -> bool:
        """Whether more of the file cannot mend the error: it is further from the buffer's end than a token can reach
        (a literal, a \\uXXXX escape), and not a string that the buffer's end cut."""
        return error.pos + _LONGEST_CUT_TOKEN < len(self.text) and not error.msg.startswith("Unterminated string")

    def key(self, seen: Set[str]) -> str:
        if self.next_char() != '"':
            raise self.fail("a member's name expected")
        name = self.value()
        if name in seen:
            raise self.fail("the key %s appears twice in one object" % json.dumps(name)[:80])
        seen.add(name)
        self.expect(":")
        return name

    def members(self) -> Iterator[str]:
        """The names of an object's members, the reader left at each one's value (which the caller reads)."""
        self.expect("{")
        seen: Set[str] = set()
        if self.next_char() == "}":
            self.position += 1
            return
        while True:
            yield self.key(seen)
            found = self.next_char()
            self.position += 1
            if found == "}":
                return
            if found != ",":
                self.position -= 1
                raise self.fail("\",\" or \"}\" expected, %s found" % (json.dumps(found) if found else "the end of the file"))


def fleet_members(handle: BinaryIO, shown: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Tuple[str, str, Any]]:
    """("member", name, value) for each top-level member of fleet.json but "hosts", and ("host", host, entry) for each
    member of "hosts", in the file's order. Raises ValueError for anything but one JSON object (nothing but whitespace
    after it) whose "hosts" is an object."""
    reader = _Reader(handle, shown, chunk_bytes)
    hosts_found = False
    for name in reader.members():
        if name != HOSTS_MEMBER:
            yield "member", name, reader.value()
            continue
        if reader.next_char() != "{":
            raise reader.fail("\"hosts\" is not an object")
        hosts_found = True
        for host in reader.members():
            yield "host", host, reader.value()
    if reader.next_char():
        raise reader.fail("more after the document")
    if not hosts_found:
        raise reader.fail("no \"hosts\"")
