"""HTTP byte ranges for the player of the original recording: which part of a file a `Range`
header asks for, and that part of a stream of pieces. Plain functions of the header and the
size, so the rules are tested without a server."""

import re
from collections.abc import Iterator

from domain.errors import TranscriberError

_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)


class Unsatisfiable(TranscriberError, code="range_not_satisfiable"):
    """The range starts past the end of the file: answered 416."""


def _at_most(digits: str, ceiling: int) -> int:
    """The number `digits` spell, or `ceiling` when it is larger. A header may spell a number of
    any length; `int()` refuses text of more than 4,300 digits, so one longer than the ceiling's
    own is known to be larger without being read."""
    significant = digits.lstrip("0")
    if len(significant) > len(str(ceiling)):
        return ceiling
    return min(int(significant or "0"), ceiling)


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The one byte range (first, last, inclusive) that a `Range` header asks for, or None to
    send the whole file (no header, several ranges, or one the server may ignore as malformed).
    Raises Unsatisfiable for a range that starts at or past the end, however far (or an empty
    suffix). A suffix longer than the file asks for all of it."""
    if not header:
        return None
    found = _RANGE.match(header)
    if found is None:
        return None
    first, last = found.groups()
    if not first and not last:
        return None
    if not first:  # the last N bytes
        suffix = _at_most(last, size)
        if suffix == 0 or size == 0:
            raise Unsatisfiable()
        return size - suffix, size - 1
    start = _at_most(first, size)
    if start >= size:
        raise Unsatisfiable()
    end = _at_most(last, size) if last else size - 1
    if end < start:
        return None
    return start, min(end, size - 1)


def first_bytes(pieces: Iterator[bytes], length: int) -> Iterator[bytes]:
    """The first `length` bytes of `pieces`; the stream is read no further than that."""
    for piece in pieces:
        if len(piece) >= length:
            yield piece[:length]
            return
        length -= len(piece)
        yield piece
