"""The owner's records over HTTP (docs/api.md): upload, the list, a record's card, its edit, its
text, the original recording for a player (with HTTP Range support) and deletion for good.

Every address needs the owner's token (`web.auth`); another owner's record is answered exactly
like a missing one, 404. The rules are those of the command line: intake through
`service.intake`, cards through `domain.card`, texts through `audio.formats`.
"""

from collections.abc import Callable
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response, StreamingResponse

from audio.formats import FORMATS, MEDIA_TYPES, render_record
from audio.sniff import GENERIC, media_type
from db import Store
from domain.card import card, links
from domain.corrections import CORRECTED, VERSIONS, NotTranslated
from domain.errors import TranscriberError
from domain.quotas import usage_view
from service import inputs, meaning
from service.config import Settings
from service.intake import IntakeError
from web.auth import enabled_owner
from web.byte_ranges import Unsatisfiable, byte_range, first_bytes
from web.errors import NOT_FOUND, ApiError, refusal
from web.paging import page
from web.parsing import bearer_token, idempotency_key, record_id
from web.uploads import spool_and_accept

# what the form takes in at most; the prompt's own limit (800) is checked at intake, which says
# how long the prompt was
MAX_PROMPT_FIELD = 100_000


def router(store: Store, settings: Settings, owner: Callable[..., dict]) -> APIRouter:
    """The /records addresses; `owner` is the dependency naming the caller (`web.auth`)."""
    routes = APIRouter(tags=["records"])
    _add_intake(routes, store, settings, owner)
    _add_cards(routes, store, owner)
    _add_contents(routes, store, owner)
    _add_deletion(routes, store, owner)
    return routes


def _own_card(store: Store, raw_id: str, who: dict) -> dict:
    """The card of the caller's record `raw_id`; 404 for a record that is not the caller's."""
    row = store.card_row(record_id(raw_id), who["id"])
    if row is None:
        raise ApiError(404, *NOT_FOUND)
    return card(row)


def _usage(store: Store, owner_id: int) -> dict:
    """What the caller uses of its quota and its limits; owners are never deleted, so its row is there."""
    row = store.owner_usage(owner_id)
    if row is None:
        raise RuntimeError(f"owner {owner_id} has no row")
    return usage_view(row)


def _add_intake(routes: APIRouter, store: Store, settings: Settings, owner: Callable[..., dict]) -> None:
    """`POST /records`: a recording in, through `service.intake` like any other way in."""
    Owner = Annotated[dict, Depends(owner)]

    @routes.post(
        "/records",
        status_code=201,
        responses={
            200: {"description": "a repeat of an earlier upload with the same `Idempotency-Key`: its record"},
            422: {
                "description": "`idempotency_key_reused`: the key was first sent with other bytes or another "
                "language, prompt or speakers"
            },
        },
    )
    def upload(
        request: Request,
        who: Owner,
        file: UploadFile = File(...),
        title: Annotated[inputs.Title, Form()] = "",
        language: str | None = Form(default=None, max_length=10),
        prompt: str | None = Form(default=None, max_length=MAX_PROMPT_FIELD),
        speakers: str | None = Form(default=None, max_length=10),
        task: str | None = Form(default=None, max_length=20),
    ):
        """Accept a recording: stored whole with its record, or refused with nothing stored.
        `prompt` (at most 800 characters: names, jargon, context) is given to the recognizer
        for every window; `language` (a code, or `auto`) wins over TRANSCRIBER_LANGUAGE;
        `speakers`: auto (the service decides), off, or the number of speakers; `task`:
        transcribe (the default) or translate (an English translation beside the original text;
        a multilingual model only, else 422 `bad_task`). With an `Idempotency-Key` (kept at least
        24 h), a repeat with the same bytes, language, prompt, speakers and task answers the
        first record (200, `Idempotent-Replayed: true`), never a second one."""
        key = idempotency_key(request)
        try:
            record, new = spool_and_accept(
                store,
                settings,
                file,
                owner_id=who["id"],
                key=key,
                title=title,
                language=language,
                prompt=prompt,
                speakers=speakers,
                task=task,
            )
        except IntakeError as error:
            raise refusal(error) from None
        addresses = links(record)
        headers = (
            {"Location": addresses["self"]} if new else {"Location": addresses["self"], "Idempotent-Replayed": "true"}
        )
        return JSONResponse(
            {"id": record, "card": addresses["self"], "text": addresses["text"]},
            status_code=201 if new else 200,
            headers=headers,
        )


def _add_cards(routes: APIRouter, store: Store, owner: Callable[..., dict]) -> None:
    """The caller's list of cards, one card, and the owner's edit of a card."""
    Owner = Annotated[dict, Depends(owner)]

    @routes.get("/records")
    def list_records(
        who: Owner,
        limit: int = Query(default=50, ge=1, le=inputs.MAX_LIMIT),
        offset: int = Query(default=0, ge=0, le=inputs.MAX_OFFSET),
    ):
        """The caller's records, newest first, and what the caller uses of its quota (audio
        hours, stored bytes, the limits)."""
        rows, total = store.list_card_rows(who["id"], limit, offset)
        return {
            **page([card(row) for row in rows], total, limit, offset, "/records"),
            "usage": _usage(store, who["id"]),
        }

    @routes.get("/records/{raw_id}")
    def get_card(raw_id: str, request: Request):
        """The card: stage reached, halt flag with its reason, attempts, pause, progress, links."""
        token, found_id = bearer_token(request), inputs.record_id(raw_id)
        if token is None or found_id is None:
            return _own_card(store, raw_id, owner(request))  # refused as any other request is
        # the owner and the card in one round trip; the token is checked by the same statement
        who, row = store.owner_and_card_row(token, found_id)
        enabled_owner(who)
        if row is None:
            raise ApiError(404, *NOT_FOUND)
        return JSONResponse(card(row))  # already plain JSON values: no encoder pass over it

    @routes.patch("/records/{raw_id}")
    def edit(raw_id: str, changes: inputs.Edit, who: Owner):
        """The owner's edit of title, summary, topics and the speakers' names ({"S1": "Alice"}: the
        speaker joins the owner's voice "Alice"), and `speakers_rejected` (["S2"]: the voice
        matched to S2 is not its own, and is never matched to it again); the pipeline never
        writes these."""
        if not store.edit(
            record_id(raw_id), who["id"], title=changes.title, summary=changes.summary, topics=changes.topics
        ):
            raise ApiError(404, *NOT_FOUND)
        if changes.speakers and not store.name_speakers(record_id(raw_id), who["id"], changes.speakers):
            raise ApiError(404, *NOT_FOUND)
        if changes.speakers_rejected and not store.reject_matches(
            record_id(raw_id), who["id"], changes.speakers_rejected
        ):
            raise ApiError(404, *NOT_FOUND)
        return _own_card(store, raw_id, who)


def _add_contents(routes: APIRouter, store: Store, owner: Callable[..., dict]) -> None:
    """What a record holds: its text once done, and the original recording for a player."""
    Owner = Annotated[dict, Depends(owner)]

    @routes.get("/records/{raw_id}/text")
    def text(
        raw_id: str,
        who: Owner,
        format: str = Query(default="txt", pattern="^(" + "|".join(FORMATS) + ")$"),
        version: str = Query(default=CORRECTED, pattern="^(" + "|".join(VERSIONS) + ")$"),
    ):
        """The text once the record is done, with the owner's corrections (`version=recognised`:
        as the recognizer wrote it; `version=english`: the English translation of a record
        uploaded with task=translate, else 409 `not_translated`); 409 with the stage (and halt)
        until then."""
        found = record_id(raw_id)  # refused as a missing record: outside the store's refusals below
        try:
            row = store.transcript(found, who["id"], version)
        except NotTranslated as error:
            raise refusal(error) from None
        if row is None:
            raise ApiError(404, *NOT_FOUND)
        if row["stage"] != "done":
            halt = _own_card(store, raw_id, who)["halt"]
            raise ApiError(
                409, "not_done", f"the record is at stage {row['stage']}, not done", stage=row["stage"], halt=halt
            )
        body = render_record(format, row)
        return Response(body, media_type=MEDIA_TYPES[format])

    @routes.patch(
        "/records/{raw_id}/text",
        responses={
            409: {"description": "`not_done`: the record is not done yet"},
            422: {
                "description": "`no_such_segment`, `no_such_word`, or a text over its limit, not on one line "
                "(or a word with a space)"
            },
        },
    )
    def correct(raw_id: str, edits: inputs.TextEdit, who: Owner):
        """The owner's corrections of a done record's text, all or none: each segment named by its
        place (from 0, as the json format lists it) gets its new text; then each word named by its
        segment and its place in that segment's `words` (from 0) gets its new text, every other
        word keeping its times. Kept apart from the recognised text, so a re-run never loses
        them. Answers the corrected text as json."""
        found = record_id(raw_id)
        try:
            written = meaning.correct(
                store,
                found,
                who["id"],
                [(e.index, e.text) for e in edits.segments],
                by=who["name"],
                words=[(w.segment, w.index, w.text) for w in edits.words],
            )
        except TranscriberError as error:
            raise refusal(error) from None
        if not written:
            raise ApiError(404, *NOT_FOUND)
        row = store.transcript(found, who["id"])
        if row is None:  # deleted right after the edit
            raise ApiError(404, *NOT_FOUND)
        return Response(render_record("json", row), media_type=MEDIA_TYPES["json"])

    @routes.get(
        "/records/{raw_id}/audio",
        response_class=Response,
        responses={
            200: {"content": {"audio/*": {}}, "description": "the original recording"},
            206: {"description": "the byte range asked for"},
            410: {"description": "the audio was deleted by retention (audio_expired)"},
            416: {"description": "a range past the end of the file"},
        },
    )
    def audio(raw_id: str, who: Owner, request: Request):
        """The original recording as uploaded, with its media type; `Range: bytes=…` answers 206
        with the part asked for, 416 for a range past its end."""
        found = store.original_audio(record_id(raw_id), who["id"])
        if found is None:
            raise ApiError(404, *NOT_FOUND)
        if found["blob_id"] is None:
            raise ApiError(
                410,
                "audio_expired",
                "the original audio was deleted by the service's retention "
                "(TRANSCRIBER_AUDIO_RETENTION_DAYS); the record and its text stay",
                expired_at=found["audio_expired_at"].isoformat(),
            )
        return _audio_response(store, found, request)


def _audio_response(store: Store, found: dict, request: Request) -> Response:
    """The stored original `found`, whole or the one byte range the request asks for (`If-Range`
    with another tag than this file's asks for the whole file)."""
    size = found["size_bytes"]
    stored = found["media_type"]
    kind = stored if stored != GENERIC else media_type(bytes(found["head"] or b""), found["source_name"])
    tag = f'"audio-{found["blob_id"]}-{size}"'
    headers = {
        "Accept-Ranges": "bytes",
        "ETag": tag,
        "Cache-Control": "private, no-cache",
        "Content-Disposition": "inline; filename*=UTF-8''" + quote(found["source_name"] or "audio"),
    }
    if_range = request.headers.get("if-range")
    try:
        wanted = byte_range(request.headers.get("range"), size) if if_range in (None, tag) else None
    except Unsatisfiable:
        return Response(status_code=416, headers={**headers, "Content-Range": f"bytes */{size}"})
    first, last = wanted if wanted is not None else (0, size - 1)
    length = last - first + 1
    body = first_bytes(store.read_blob(found["blob_id"], start_byte=first), length)
    headers["Content-Length"] = str(length)
    if wanted is None:
        return StreamingResponse(body, media_type=kind, headers=headers)
    headers["Content-Range"] = f"bytes {first}-{last}/{size}"
    return StreamingResponse(body, status_code=206, media_type=kind, headers=headers)


def _add_deletion(routes: APIRouter, store: Store, owner: Callable[..., dict]) -> None:
    """The owner's deletion of a record for good."""
    Owner = Annotated[dict, Depends(owner)]

    @routes.delete(
        "/records/{raw_id}",
        status_code=204,
        response_class=Response,
        responses={204: {"description": "deleted for good"}, 404: {"description": "no such record"}},
    )
    def delete(raw_id: str, who: Owner):
        """Remove the record, its audio and its text for good, also while a step holds it (that
        step's save is then refused). The journal keeps only that it was deleted, and by whom."""
        if store.delete_record(record_id(raw_id), who["id"], by=who["name"], role="owner") is None:
            raise ApiError(404, *NOT_FOUND)
        return Response(status_code=204)
