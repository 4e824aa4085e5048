"""HTTP byte ranges for the player of the original recording: which part of a file a `Range`
header asks for, and that part of a stream of pieces. Plain functions of the header and the
size, so the rules are tested without a server."""

import re
from collections.abc import Iterator

from domain.errors import TranscriberError

_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)


class Unsatisfiable(TranscriberError, code="range_not_satisfiable"):
    """The range starts past the end of the file: answered 416."""


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The one byte range (first, last, inclusive) that a `Range` header asks for, or None to
    send the whole file (no header, several ranges, or one the server may ignore as malformed).
    Raises Unsatisfiable for a range that starts past the end (or an empty suffix)."""
    if not header:
        return None
    found = _RANGE.match(header)
    if found is None:
        return None
    first, last = found.groups()
    if not first and not last:
        return None
    if not first:  # the last N bytes
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise Unsatisfiable()
        return max(size - suffix, 0), size - 1
    start = int(first)
    end = int(last) if last else max(start, size - 1)
    if end < start:
        return None
    if start >= size:
        raise Unsatisfiable()
    return start, min(end, size - 1)


def first_bytes(pieces: Iterator[bytes], length: int) -> Iterator[bytes]:
    """The first `length` bytes of `pieces`; the stream is read no further than that."""
    for piece in pieces:
        if len(piece) >= length:
            yield piece[:length]
            return
        length -= len(piece)
        yield piece
