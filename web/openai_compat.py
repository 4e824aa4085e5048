"""`POST /v1/audio/transcriptions`, the shape of OpenAI's transcription API, so the `openai`
client libraries and tools built on them work against this service with the owner's token as
the API key.

The file is accepted like any upload (a record of the owner's, in the durable pipeline); the
call then waits for the record to be done, up to TRANSCRIBER_SYNC_WAIT_SECONDS (540 s: well
before the official client's 600 s read timeout, so the client hears the answer rather than
retrying). Past that it answers an error naming the record's card, and the record goes on:
nothing is lost, and the text is at its address once done. One intended upload makes one
record: with `Idempotency-Key`, a repeat is the key's first record; without one, a retry of the
same bytes while the first is in the pipeline waits for that record (`db.uploads`). Either only
when the repeat asks alike (language, prompt, speakers: `domain.asked`); `response_format` and
`timestamp_granularities[]` only shape the answer, so they may differ. Errors here
have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}` (plus the service's own
top-level `message`), and carry `x-should-retry: false` where a retry would only upload the file
again.
"""

import asyncio
import time
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from loguru import logger
from starlette.exceptions import HTTPException as StarletteHTTPException

from db import Store
from domain.asked import TRANSCRIBE, TRANSLATE
from domain.card import links, speakers
from domain.corrections import CORRECTED, ENGLISH
from service.config import Settings
from service.intake import BadLanguage, BadPrompt, BadSpeakers, BadTask, IntakeError, KeyReused
from web.errors import ApiError, refusal
from web.openai_text import openai_text_response
from web.parsing import idempotency_key
from web.uploads import spool_and_accept

RESPONSE_FORMATS = ("json", "text", "srt", "vtt", "verbose_json")
_TYPES = {401: "authentication_error", 403: "permission_error", 504: "timeout"}
POLL_FIRST_SECONDS, POLL_MOST_SECONDS = 0.1, 1.0
# the form field each refusal of a field is about; OpenAI answers a bad field with 400
FIELD_REFUSALS = {BadLanguage: "language", BadPrompt: "prompt", BadSpeakers: "speakers", BadTask: "task"}


def openai_error(
    status: int, code: str, message: str, *, param: str | None = None, headers: dict | None = None, **extra
) -> JSONResponse:
    kind = _TYPES.get(status, "invalid_request_error" if status < 500 else "server_error")
    body = {
        "error": {"message": message, "type": kind, "param": param, "code": code, **extra},
        "message": message,
        **extra,
    }
    headers = {**(headers or {}), "x-should-retry": "false"}
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(body, status_code=status, headers=headers)


class OpenAIRoute(APIRoute):
    """A route whose refusals take OpenAI's error shape (client libraries read `error.message`)."""

    def get_route_handler(self):
        handler = super().get_route_handler()

        async def answer(request: Request):
            try:
                return await handler(request)
            except ApiError as error:
                return openai_error(error.status, error.code, error.message, **error.extra)
            except RequestValidationError as error:
                first = error.errors()[0]
                field = ".".join(map(str, first["loc"][1:])) or None
                return openai_error(
                    400, "invalid_request", f"{field}: {first['msg']}" if field else first["msg"], param=field
                )
            except StarletteHTTPException as error:
                return openai_error(error.status_code, "http_error", str(error.detail))
            except Exception as error:  # noqa: BLE001 - a retry might upload the file twice: say so, never a trace
                logger.error("request {} {} failed: {}", request.method, request.url.path, type(error).__name__)
                return openai_error(500, "internal", "internal error")

        return answer


# What the address answers besides errors, for its OpenAPI description.
ANSWERS: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/json": {}, "text/plain": {}, "text/vtt": {}, "application/x-subrip": {}}},
    504: {
        "description": "not done within TRANSCRIBER_SYNC_WAIT_SECONDS; the error names the record's card, which goes on"
    },
}
FILE = File(..., description="the recording, any common container or codec")
FORMAT = Form(default="json", max_length=20)
TEMPERATURE = Form(default=None, ge=0, le=1, description="accepted and ignored")
GRANULARITIES = Form(default=[], alias="timestamp_granularities[]")
MODEL = Form(
    default="whisper-1",
    max_length=200,
    description="accepted for compatibility; the service's configured engine is used",
)
PROMPT = Form(
    default=None, max_length=100_000, description="at most 800 characters, given to the recognizer for every window"
)
SPEAKERS = Form(
    default=None,
    max_length=10,
    alias="speakers",
    description="who spoke when (auto, off or their number); asked for, the answer waits for the speakers too",
)


def router(store: Store, settings: Settings, owner: Callable[..., dict]) -> APIRouter:
    """The OpenAI-compatible address; `owner` is the dependency naming the caller (`web.auth`)."""
    routes = APIRouter(tags=["openai-compatible"], route_class=OpenAIRoute)
    Owner = Annotated[dict, Depends(owner)]

    async def answer(request: Request, who: dict, file: UploadFile, asked: dict, shape: dict) -> Response:
        """The upload accepted into the durable pipeline, and its text once done (`asked["task"]`
        translate: the English text) in the response format `shape` asks for."""
        _check_answer_asked(shape["response_format"], shape["granularities"], shape["stream"])
        key = idempotency_key(request)
        try:  # without a key, a retry of the same bytes asked alike waits for the first record
            record_id, _ = await run_in_threadpool(
                spool_and_accept,
                store,
                settings,
                file,
                owner_id=who["id"],
                key=key,
                attach_in_flight=key is None,
                **asked,
            )
        except IntakeError as error:
            raise _intake_refusal(error) from None
        waiting = Waiting(
            store,
            who["id"],
            record_id,
            with_speakers=asked["speakers"] not in (None, "", "off"),
            version=ENGLISH if asked["task"] == TRANSLATE else CORRECTED,
        )
        done = await waiting.until_done(request, settings.sync_wait_seconds)
        if not isinstance(done, dict):
            return done
        granularities = shape["granularities"]
        return openai_text_response(
            shape["response_format"],
            done,
            words="word" in granularities,
            segments_wanted="segment" in granularities,
            task=asked["task"],
        )

    @routes.post("/v1/audio/transcriptions", summary="Transcribe audio (OpenAI-compatible)", responses=ANSWERS)
    async def transcriptions(
        request: Request,
        who: Owner,
        file: UploadFile = FILE,
        model: str = MODEL,
        language: str | None = Form(default=None, max_length=10),
        prompt: str | None = PROMPT,
        response_format: str = FORMAT,
        temperature: float | None = TEMPERATURE,
        granularities: list[str] = GRANULARITIES,
        stream: bool = Form(default=False),
        speakers_asked: str | None = SPEAKERS,
    ):
        """Accept the file into the durable pipeline and answer its text once done, in
        `response_format` (json, text, srt, vtt, verbose_json with segments; `words` too with
        `timestamp_granularities[]=word`). Waits up to TRANSCRIBER_SYNC_WAIT_SECONDS; past that
        answers 504 naming the record's card (the record goes on)."""
        asked = {"language": language, "prompt": prompt, "speakers": speakers_asked, "task": TRANSCRIBE}
        shape = {"response_format": response_format, "granularities": granularities, "stream": stream}
        return await answer(request, who, file, asked, shape)

    @routes.post(
        "/v1/audio/translations",
        summary="Translate audio into English (OpenAI-compatible)",
        responses=ANSWERS,
    )
    async def translations(
        request: Request,
        who: Owner,
        file: UploadFile = FILE,
        model: str = MODEL,
        language: str | None = Form(default=None, max_length=10, description="the speech's language, if known"),
        prompt: str | None = PROMPT,
        response_format: str = FORMAT,
        temperature: float | None = TEMPERATURE,
        granularities: list[str] = GRANULARITIES,
        speakers_asked: str | None = SPEAKERS,
    ):
        """As /v1/audio/transcriptions, answering the speech in English: the record is accepted
        with task=translate (its original text is kept too). A multilingual model only: with an
        English-only one, 400 `bad_task` naming the setting, and nothing is stored."""
        asked = {"language": language, "prompt": prompt, "speakers": speakers_asked, "task": TRANSLATE}
        shape = {"response_format": response_format, "granularities": granularities, "stream": False}
        return await answer(request, who, file, asked, shape)

    return routes


def _check_answer_asked(response_format: str, granularities: list[str], stream: bool) -> None:
    """400 for an answer this address cannot give, before the file is accepted."""
    if response_format not in RESPONSE_FORMATS:
        raise ApiError(
            400,
            "invalid_response_format",
            f"response_format must be one of {', '.join(RESPONSE_FORMATS)}",
            param="response_format",
        )
    unknown = sorted(set(granularities) - {"word", "segment"})
    if unknown:
        raise ApiError(
            400,
            "invalid_timestamp_granularities",
            f"unknown timestamp granularity: {unknown[0]}",
            param="timestamp_granularities",
        )
    if stream:
        raise ApiError(400, "unsupported", "streaming is not supported; the answer comes once done", param="stream")


def _intake_refusal(error: IntakeError) -> ApiError:
    """An intake refusal in OpenAI's terms: a bad form field is a 400 naming the field; a reused
    key names none; anything else is about the file, with the service's own status."""
    field = next((name for kind, name in FIELD_REFUSALS.items() if isinstance(error, kind)), None)
    if field is not None:
        return refusal(error, status=400, param=field)
    return refusal(error, param=None if isinstance(error, KeyReused) else "file")


class Waiting:
    """The wait for an accepted record's text, polled from the database with a growing pause."""

    def __init__(self, store: Store, owner_id: int, record_id: int, *, with_speakers: bool, version: str = CORRECTED):
        self.store, self.owner_id, self.record_id, self.with_speakers = store, owner_id, record_id, with_speakers
        self.version = version
        addresses = links(record_id)
        self.card, self.text = addresses["self"], addresses["text"]
        self.record = {"id": record_id, "card": self.card, "text": self.text}

    def card_and_text(self) -> tuple[dict | None, dict | None]:
        """The record's card row, and its text row once done (`with_speakers`: and its speakers
        no longer pending)."""
        row = self.store.card_row(self.record_id, self.owner_id)
        if row is None or row["stage"] != "done" or (self.with_speakers and speakers(row)["state"] == "pending"):
            return row, None
        text = self.store.transcript(self.record_id, self.owner_id, self.version)
        if text is None:
            return row, None
        # the English text is in English; the original, in the language recognition used
        return row, (text if self.version == ENGLISH else {**text, "language": row["language"]})

    async def until_done(self, request: Request, wait_seconds: float) -> dict | Response:
        """The done record's text row; or the answer to give instead: the record was deleted or
        halted meanwhile, `wait_seconds` passed (504; the record goes on), or the client left."""
        deadline = time.monotonic() + wait_seconds
        pause = POLL_FIRST_SECONDS
        while True:
            row, done = await run_in_threadpool(self.card_and_text)
            if done is not None:
                return done
            going = self.going_on(row)
            left = deadline - time.monotonic()
            if left <= 0:
                return openai_error(
                    504,
                    "still_working",
                    f"not done within {wait_seconds:g}s (TRANSCRIBER_SYNC_WAIT_SECONDS): record "
                    f"{self.record_id} goes on at stage {going['stage']}; its card is at {self.card} and its "
                    f"text will be at {self.text}",
                    record=self.record,
                    headers={"Location": self.card},
                )
            if await request.is_disconnected():
                return Response(status_code=499)  # nobody is listening; the record goes on
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, POLL_MOST_SECONDS)

    def going_on(self, row: dict | None) -> dict:
        """The row of a record that goes on: 404 when the record was deleted by its owner
        meanwhile, 422 with its reason when it halted."""
        if row is None:
            raise ApiError(
                404, "not_found", f"record {self.record_id} was deleted before it was done", record=self.record
            )
        if row["halted_at"] is not None:
            raise ApiError(
                422,
                row["halt_reason"],
                f"record {self.record_id} halted at stage {row['stage']} ({row['halt_reason']}: "
                f"{row['halt_error']}); its card is at {self.card}",
                record=self.record,
            )
        return row
