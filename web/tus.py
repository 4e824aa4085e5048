"""Resumable uploads over HTTP: tus 1.0 (https://tus.io/protocols/resumable-upload) at /uploads,
with the creation, creation-with-upload, creation-defer-length, termination, expiration and
checksum extensions (docs/api.md).

The owner rules are those of `POST /records`: the owner's token or page session (with its CSRF
token) on every request but OPTIONS, checked before a byte of a body is read (`web.gate`);
bodies within the upload limit (`web.body_limit`); another owner's upload answered exactly like
a missing one, 404; an Idempotency-Key on the creation makes a repeat answer the first upload.
A request's bytes are committed as they stream in (`service.resumable.Pieces`, `db.resumable`), a
chunk at most in memory whatever the request's size; a request cut short keeps what arrived (one
sent with an Upload-Checksum is all or nothing: `service.resumable.verified`), and HEAD tells the
client where to go on from: the committed offset, at once, even while another request is in the
middle of a body (tus lets the offset lag a live PATCH: the client resumes from it, and a PATCH at
an offset that has moved is refused with 409). The request that brings the last byte makes the
record through the one intake, and answers its refusal if intake refuses the bytes; a HEAD or GET
that finds the last byte in and no record makes it unless another finisher holds the upload
(`db.resumable.finishing`), and answers the final offset either way.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anyio
from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from db import Store
from db.resumable import OffsetMismatch, PastLength, UploadGone
from service import resumable
from service.config import Settings
from service.intake import IntakeError, TooLarge, size_limit_message
from web.errors import ApiError, error_response, refusal
from web.parsing import byte_count, has_body, idempotency_key

TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,creation-with-upload,creation-defer-length,termination,expiration,checksum"
OFFSET_TYPE = "application/offset+octet-stream"
NO_UPLOAD = ("not_found", "no such upload")
# how long a PATCH waits for one before it of the same upload to finish writing (`_Tus.patch`)
WAIT_FOR_WRITER_SECONDS = 5.0


def router(store: Store, settings: Settings, owner: Callable[..., dict]) -> APIRouter:
    """The /uploads addresses; `owner` is the dependency naming the caller (`web.auth`)."""
    routes = APIRouter(tags=["uploads"])
    tus = _Tus(store, settings, owner)

    # HEAD and OPTIONS answer with headers only (no error body either): docs/api.md describes
    # them, the OpenAPI document leaves them out
    @routes.options("/uploads", status_code=204, response_class=Response, include_in_schema=False)
    @routes.options("/uploads/{upload_id}", status_code=204, response_class=Response, include_in_schema=False)
    def options():
        """What this server speaks of tus: its version, extensions and the largest upload."""
        return Response(
            status_code=204,
            headers={
                "Tus-Resumable": TUS_VERSION,
                "Tus-Version": TUS_VERSION,
                "Tus-Extension": TUS_EXTENSIONS,
                "Tus-Max-Size": str(settings.max_upload_bytes),
                "Tus-Checksum-Algorithm": ",".join(resumable.CHECKSUM_ALGORITHMS),
            },
        )

    @routes.post("/uploads", status_code=201, response_class=Response)
    async def create(request: Request):
        """Creation: `Upload-Length` (or `Upload-Defer-Length: 1`), `Upload-Metadata` with
        filename, title, prompt, language, speakers; a body of type
        application/offset+octet-stream is the upload's first bytes. 201 with `Location`."""
        return await tus.answer(request, tus.create)

    @routes.api_route("/uploads/{upload_id}", methods=["HEAD"], response_class=Response, include_in_schema=False)
    async def head(upload_id: str, request: Request):
        """The committed offset (`Upload-Offset`), the length when known, `Upload-Expires`."""
        return await tus.answer(request, tus.head, upload_id)

    @routes.get("/uploads/{upload_id}")
    async def state(upload_id: str, request: Request):
        """The upload as JSON: id, offset, length, expires and the record it made (null before)."""
        return await tus.answer(request, tus.state, upload_id)

    @routes.patch("/uploads/{upload_id}", status_code=204, response_class=Response)
    async def patch(upload_id: str, request: Request):
        """Bytes at `Upload-Offset` (application/offset+octet-stream), committed before the
        204; `Upload-Length` makes a deferred length known. The last byte makes the record."""
        async with tus.writing(upload_id) as before:
            return await tus.answer(request, tus.patch, upload_id, before)

    @routes.delete("/uploads/{upload_id}", status_code=204, response_class=Response)
    async def terminate(upload_id: str, request: Request):
        """Termination: the upload and its bytes go (a record it made stays)."""
        return await tus.answer(request, tus.terminate, upload_id)

    return routes


def _run(function, *args):
    return to_thread.run_sync(lambda: function(*args))


class _Tus:
    """The protocol's requests; each handler returns the answer or raises ApiError."""

    def __init__(self, store: Store, settings: Settings, owner: Callable[..., dict]):
        self.store, self.settings, self.owner = store, settings, owner
        self._writing: dict[str, anyio.Event] = {}  # uploads a request of this process writes to

    @asynccontextmanager
    async def writing(self, upload_id: str) -> AsyncIterator[anyio.Event | None]:
        """A request that may write to the upload, from its start (before its token's check and
        its first byte): the one of this process that was writing to it before, if any, set once
        that one is done (`patch` may wait for it), and a later one gets this one's."""
        before = self._writing.get(upload_id)
        done = self._writing[upload_id] = anyio.Event()
        try:
            yield before
        finally:
            if self._writing.get(upload_id) is done:  # the one before, if still writing, is next
                if before is not None and not before.is_set():
                    self._writing[upload_id] = before
                else:
                    del self._writing[upload_id]
            done.set()

    async def answer(self, request: Request, handler, *args) -> Response:
        """The handler's answer, or its refusal in the API's error shape; either way with
        `Tus-Resumable` (a HEAD's refusal has no body)."""
        try:
            if request.headers.get("tus-resumable") != TUS_VERSION:
                message = f"this server speaks tus {TUS_VERSION}: send `Tus-Resumable: {TUS_VERSION}`"
                raise ApiError(412, "tus_version", message)
            who = await _run(self.owner, request)
            response: Response = await handler(request, who, *args)
        except ApiError as refused:
            if request.method == "HEAD":
                response = Response(status_code=refused.status)
            else:
                response = error_response(refused.status, refused.code, refused.message, **refused.extra)
            if refused.status == 412:
                response.headers["Tus-Version"] = TUS_VERSION
        response.headers["Tus-Resumable"] = TUS_VERSION
        response.headers.setdefault("Cache-Control", "no-store")
        return response

    # creation

    async def create(self, request: Request, who: dict) -> Response:
        length, deferred = byte_count(request.headers.get("upload-length")), request.headers.get("upload-defer-length")
        if (length is None) == (deferred is None) or deferred not in (None, "1"):
            raise ApiError(400, "bad_upload_length", "send either `Upload-Length: <bytes>` or `Upload-Defer-Length: 1`")
        key = idempotency_key(request)
        try:
            metadata = resumable.parse_metadata(request.headers.get("upload-metadata"))
            new = resumable.new_upload(self.settings, length, metadata, key)
            upload_id, created = await _run(resumable.create, self.store, who["id"], new)
        except IntakeError as error:
            raise refusal(error) from None
        location = f"/uploads/{upload_id}"
        row = await self._row(upload_id, who)
        if not created:  # a repeat of the creation: the first one's upload, its body not read
            response = self._with_state(Response(status_code=200), row)
            response.headers["Idempotent-Replayed"] = "true"
        else:
            if has_body(request):
                _check_offset_type(request)
                row = await self._write(request, who, row, 0)
            response = self._with_state(Response(status_code=201), row)
        response.headers["Location"] = location
        return response

    # reading

    # HEAD and GET wait for nothing: not for a PATCH in the middle of a body (its pieces are
    # committed as they fill, and the offset answered is what is committed), nor for another
    # finisher of a complete upload (the final offset then, without the record)

    async def head(self, request: Request, who: dict, upload_id: str) -> Response:
        row = await self._settled(upload_id, who)
        return self._with_state(Response(status_code=200), row)

    async def state(self, request: Request, who: dict, upload_id: str) -> Response:
        row = await self._settled(upload_id, who)
        response = JSONResponse(
            {
                "id": row["id"],
                "offset": row["received"],
                "length": row["upload_length"],
                "expires": self._expires(row).isoformat(),
                "record": row["record_id"] if row["finished_at"] is not None else None,
            }
        )
        return self._with_state(response, row)

    # writing

    async def patch(self, request: Request, who: dict, upload_id: str, before: anyio.Event | None) -> Response:
        _check_offset_type(request)
        offset = byte_count(request.headers.get("upload-offset"), "Upload-Offset")
        if offset is None:
            raise ApiError(400, "bad_upload_offset", "a PATCH needs `Upload-Offset: <bytes>`")
        row = await self._row(upload_id, who)
        if before is not None and not before.is_set() and offset >= row["received"]:
            # a request of this process still writing to the upload: one whose connection was
            # cut commits what it received, and a client that resumed at once from a HEAD
            # answered meanwhile is told the offset that includes it (409) instead of sending
            # those bytes again. An offset behind the committed one is refused at once: offsets
            # only grow. However long it waits, two writers at one offset cannot both write
            # (`db.resumable.write_upload_piece`).
            with anyio.move_on_after(WAIT_FOR_WRITER_SECONDS):
                await before.wait()
            row = await self._row(upload_id, who)
        if offset != row["received"]:
            message = f"the upload's offset is {row['received']}, not {offset}: ask HEAD and go on from there"
            raise ApiError(409, "offset_mismatch", message, offset=row["received"])
        declared = byte_count(request.headers.get("upload-length"))
        if declared is not None and declared != row["upload_length"]:
            if declared > self.settings.max_upload_bytes:
                raise refusal(TooLarge(size_limit_message(self.settings)))
            if row["finished_at"] is not None or not await _run(
                self.store.declare_upload_length, upload_id, who["id"], declared
            ):
                message = f"the upload's length is {row['upload_length']} and cannot become {declared}"
                raise ApiError(400, "bad_upload_length", message)
            row = await self._row(upload_id, who)
        if row["finished_at"] is None:
            row = await self._write(request, who, row, offset)
        elif has_body(request):
            raise ApiError(
                413, PastLength.code, f"the upload is complete at {row['received']} bytes; nothing more is taken"
            )
        return self._with_state(Response(status_code=204), row)

    async def terminate(self, request: Request, who: dict, upload_id: str) -> Response:
        if not await _run(self.store.remove_upload, upload_id, who["id"]):
            raise ApiError(404, *NO_UPLOAD)
        return Response(status_code=204)

    async def _write(self, request: Request, who: dict, row: dict, offset: int) -> dict:
        """The request's body committed at `offset` piece by piece, then the record made if that
        was the last byte: the upload's row after. Past the length or the limit, nothing of
        the piece that would pass it is written (a declared Content-Length is weighed first,
        so such a request writes nothing at all)."""
        length = row["upload_length"]
        limit = length if length is not None else self.settings.max_upload_bytes
        sent = byte_count(request.headers.get("content-length"))
        if sent is not None and offset + sent > limit:
            raise self._past(length)
        upload_id, pieces = row["id"], resumable.Pieces(offset)
        source: AsyncIterator[bytes] = request.stream()
        checksum = request.headers.get("upload-checksum")
        try:
            if checksum is not None:  # all or nothing: held until it all came and matches
                source = resumable.verified(source, resumable.Checksum(checksum), limit - offset)
            async for data in source:
                for at, piece in pieces.feed(data):
                    await self._piece(upload_id, who, at, piece, limit, length)
        except ClientDisconnect:
            pass  # what arrived is kept (of a checked request, nothing): the client resumes from HEAD's offset
        except PastLength:
            raise self._past(length) from None
        except IntakeError as error:
            raise refusal(error) from None
        rest = pieces.rest()
        if rest is not None:
            await self._piece(upload_id, who, *rest, limit, length)
        row = await self._row(upload_id, who)
        return await self._finished(row, who)

    async def _piece(self, upload_id: str, who: dict, at: int, piece: bytes, limit: int, length: int | None) -> None:
        if at + len(piece) > limit:
            raise self._past(length)
        try:
            await _run(self.store.write_upload_piece, upload_id, who["id"], at, piece)
        except OffsetMismatch as error:
            raise ApiError(409, error.code, str(error)) from None
        except PastLength as error:
            raise ApiError(413, error.code, str(error)) from None
        except UploadGone:
            raise ApiError(404, *NO_UPLOAD) from None

    def _past(self, length: int | None) -> ApiError:
        if length is None:
            return refusal(TooLarge(size_limit_message(self.settings)))
        return ApiError(413, PastLength.code, f"the bytes would go past the upload's length of {length}; none taken")

    # the end of an upload

    async def _settled(self, upload_id: str, who: dict) -> dict:
        """The upload's row, its record made first if its last byte is in but no record was
        made of it (the process that took that byte died before), unless another finisher is
        making it right now: then as it stands, complete without its record."""
        return await self._finished(await self._row(upload_id, who), who, wait=False)

    async def _finished(self, row: dict, who: dict, *, wait: bool = True) -> dict:
        """The row of a complete upload after its record is made (by this request, or with
        `wait` by another finisher it waited for)."""
        if row["finished_at"] is not None or row["upload_length"] != row["received"]:
            return row
        try:
            await _run(functools.partial(resumable.finish, wait=wait), self.store, self.settings, row["id"], who["id"])
        except UploadGone:
            raise ApiError(404, *NO_UPLOAD) from None
        except IntakeError as error:
            raise refusal(error) from None
        return await self._row(row["id"], who)

    async def _row(self, upload_id: str, who: dict) -> dict:
        row = await _run(self.store.upload_state, upload_id, who["id"])
        if row is None:
            raise ApiError(404, *NO_UPLOAD)
        return dict(row)

    def _expires(self, row: dict) -> datetime:
        return (row["touched_at"] + timedelta(seconds=self.settings.upload_expiry_seconds)).astimezone(UTC)

    def _with_state(self, response: Response, row: dict) -> Response:
        """The tus headers that say where an upload stands."""
        response.headers["Upload-Offset"] = str(row["received"])
        if row["upload_length"] is None:
            response.headers["Upload-Defer-Length"] = "1"
        else:
            response.headers["Upload-Length"] = str(row["upload_length"])
        response.headers["Upload-Expires"] = format_datetime(self._expires(row), usegmt=True)
        response.headers["Cache-Control"] = "no-store"
        if row["finished_at"] is not None:
            response.headers["Upload-Record"] = str(row["record_id"])
        return response


def _check_offset_type(request: Request) -> None:
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != OFFSET_TYPE:
        raise ApiError(415, "bad_content_type", f"the bytes of an upload are sent as `Content-Type: {OFFSET_TYPE}`")
