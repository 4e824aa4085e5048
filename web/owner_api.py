"""The owner's addresses beside the card and the text: the original recording for a player
(with HTTP Range support) and deletion for good. Another owner's record answers 404, exactly
like a missing one."""

import re
from typing import Annotated, Callable, Iterator
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response, StreamingResponse

from audio.sniff import GENERIC, media_type
from db import Store
from web.app import NOT_FOUND, ApiError

_RANGE = re.compile(r"^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$", re.IGNORECASE)


class Unsatisfiable(Exception):
    pass


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


def _slice(pieces: Iterator[bytes], length: int) -> Iterator[bytes]:
    for piece in pieces:
        if len(piece) >= length:
            yield piece[:length]
            return
        length -= len(piece)
        yield piece


def router(store: Store, owner: Callable[..., dict], record_id: Callable[[str], int]) -> APIRouter:
    routes = APIRouter(tags=["records"])
    Owner = Annotated[dict, Depends(owner)]

    @routes.get("/records/{raw_id}/audio", response_class=Response,
                responses={200: {"content": {"audio/*": {}}, "description": "the original recording"},
                           206: {"description": "the byte range asked for"},
                           416: {"description": "a range past the end of the file"}})
    def audio(raw_id: str, who: Owner, request: Request):
        """The original recording as uploaded, with its media type; `Range: bytes=…` answers 206
        with the part asked for, 416 for a range past its end."""
        found = store.original_audio(record_id(raw_id), who["id"])
        if found is None:
            raise ApiError(404, *NOT_FOUND)
        size = found["size_bytes"]
        stored = found["media_type"]
        kind = stored if stored != GENERIC else media_type(bytes(found["head"] or b""), found["source_name"])
        tag = f'"audio-{found["blob_id"]}-{size}"'
        headers = {"Accept-Ranges": "bytes", "ETag": tag, "Cache-Control": "private, no-cache",
                   "Content-Disposition": "inline; filename*=UTF-8''" + quote(found["source_name"] or "audio")}
        if_range = request.headers.get("if-range")
        try:
            wanted = byte_range(request.headers.get("range"), size) if if_range in (None, tag) else None
        except Unsatisfiable:
            return Response(status_code=416, headers={**headers, "Content-Range": f"bytes */{size}"})
        first, last = wanted if wanted is not None else (0, size - 1)
        length = last - first + 1
        body = _slice(store.read_blob(found["blob_id"], start_byte=first), length)
        headers["Content-Length"] = str(length)
        if wanted is None:
            return StreamingResponse(body, media_type=kind, headers=headers)
        headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        return StreamingResponse(body, status_code=206, media_type=kind, headers=headers)

    @routes.delete("/records/{raw_id}", status_code=204, response_class=Response,
                   responses={204: {"description": "deleted for good"}, 404: {"description": "no such record"}})
    def delete(raw_id: str, who: Owner):
        """Remove the record, its audio and its text for good, also while a step holds it (that
        step's save is then refused). The journal keeps only that it was deleted, and by whom."""
        if store.delete_record(record_id(raw_id), who["id"], by=who["name"], role="owner") is None:
            raise ApiError(404, *NOT_FOUND)
        return Response(status_code=204)

    return routes
