"""The HTTP API of service.md: records, their cards and texts, for the owner holding a token.

Every address but /healthz needs `Authorization: Bearer <token>`; another owner's record is
answered exactly like a missing one. Errors are JSON `{"error": code, "message": text}`; no
stack trace reaches a client, and no request body or transcript reaches the log.
"""

import shutil
import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import Depends, FastAPI, File, Form, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi_offline import FastAPIOffline
from loguru import logger
from starlette.exceptions import HTTPException as StarletteHTTPException

from audio.formats import FORMATS, MEDIA_TYPES, render
from db import Store
from domain.card import card, links
from service import inputs
from service.config import Settings
from service.intake import IntakeError, TooLarge, accept_file, size_limit_message
from web.health import DatabaseProbe
from web import pages

COPY_BYTES = 1 << 20


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, **extra):
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def _error(status: int, code: str, message: str, **extra) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status, headers=headers)


NOT_FOUND = ("not_found", "no such record")


def create_app(store: Store, settings: Settings) -> FastAPI:
    app = FastAPIOffline(title="Transcriber", version="0.1.0",
                         description="Self-hosted speech-to-text over a durable PostgreSQL pipeline.")
    pages.mount(app, store, settings)  # the owner's page at / and the panel at /admin

    @app.exception_handler(ApiError)
    async def api_error(request: Request, error: ApiError):
        return _error(error.status, error.code, error.message, **error.extra)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed", 413: TooLarge.code}.get(error.status_code, "http_error")
        return _error(error.status_code, code, str(error.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        problems = [{"field": ".".join(map(str, e["loc"][1:])), "problem": e["msg"]} for e in error.errors()]
        return _error(422, "invalid_request", "the request is not valid", problems=problems)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception):
        logger.opt(exception=False).error("request {} {} failed: {}", request.method, request.url.path,
                                          type(error).__name__)
        return _error(500, "internal", "internal error")

    # a body over the limit (the file plus room for the form around it) is refused as it comes
    app.add_middleware(inputs.BodyLimit, limit=settings.max_upload_bytes + 64 * 1024,
                       message=size_limit_message(settings), code=TooLarge.code)

    def bearer(request: Request) -> str | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return token.strip() if scheme.lower() == "bearer" and token.strip() else None

    def owner(request: Request) -> dict:
        token = bearer(request)
        return admitted(store.owner_by_token(token) if token else None)

    def admitted(found: dict | None) -> dict:
        if found is None:
            raise ApiError(401, "unauthorized", "a valid `Authorization: Bearer <token>` header is required")
        if found["disabled"]:
            raise ApiError(403, "owner_disabled", f"the owner {found['name']!r} is disabled; "
                           "the service's operator can enable it (transcriber owner enable NAME)")
        return found

    Owner = Annotated[dict, Depends(owner)]

    def record_id(raw: str) -> int:
        found = inputs.record_id(raw)
        if found is None:
            raise ApiError(404, *NOT_FOUND)
        return found

    def own_card(raw_id: str, who: dict) -> dict:
        row = store.card_row(record_id(raw_id), who["id"])
        if row is None:
            raise ApiError(404, *NOT_FOUND)
        return card(row)

    database_probe = DatabaseProbe(store.db)

    @app.get("/metrics", tags=["service"], response_class=Response,
             responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
    def prometheus_metrics():
        """Prometheus metrics: records per stage, halted by reason, waiting out a pause (read from
        the database now), and this process's claims, saves, refused writes, step durations and
        recognition real-time factor. No token needed, like /healthz: counts only, nothing private."""
        from service import metrics

        return Response(metrics.exposition(store), media_type=metrics.CONTENT_TYPE)

    @app.get("/healthz", tags=["service"])
    async def healthz():
        """200 `{status: ok, database: true}`, or within about 2 s whatever the database does,
        503 `{status: degraded, database: false, error: database_unavailable, message}`."""
        if await database_probe.check():
            return JSONResponse({"status": "ok", "database": True})
        return JSONResponse({"status": "degraded", "database": False, "error": "database_unavailable",
                             "message": f"the database did not answer within {database_probe.timeout:g}s"},
                            status_code=503)

    @app.post("/records", status_code=201, tags=["records"])
    def upload(who: Owner, file: UploadFile = File(...), title: Annotated[inputs.Title, Form()] = "",
               language: str | None = Form(default=None, max_length=10)):
        """Accept a recording: stored whole with its record, or refused with nothing stored."""
        name = inputs.source_name(file.filename)
        with tempfile.TemporaryDirectory(prefix="transcriber-upload-") as folder:
            path = Path(folder) / "upload"
            with path.open("wb") as out:
                shutil.copyfileobj(file.file, out, COPY_BYTES)
            try:
                new_id = accept_file(store, settings, path, owner_id=who["id"], title=title, source_name=name,
                                     language=language)
            except IntakeError as error:
                raise ApiError(error.status, error.code, str(error)) from None
        addresses = links(new_id)
        return JSONResponse({"id": new_id, "card": addresses["self"], "text": addresses["text"]},
                            status_code=201, headers={"Location": addresses["self"]})

    @app.get("/records", tags=["records"])
    def list_records(who: Owner, limit: int = Query(default=50, ge=1, le=inputs.MAX_LIMIT),
                     offset: int = Query(default=0, ge=0, le=inputs.MAX_OFFSET)):
        """The caller's records, newest first."""
        rows, total = store.list_card_rows(who["id"], limit, offset)
        following = offset + len(rows)
        return {"items": [card(row) for row in rows], "total": total, "limit": limit, "offset": offset,
                "next": f"/records?limit={limit}&offset={following}" if following < total else None}

    @app.get("/records/{raw_id}", tags=["records"])
    def get_card(raw_id: str, request: Request):
        """The card: stage reached, halt flag with its reason, attempts, pause, progress, links."""
        token, found_id = bearer(request), inputs.record_id(raw_id)
        if token is None or found_id is None:
            return own_card(raw_id, owner(request))  # refused as any other request is
        # the owner and the card in one round trip; the token is checked by the same statement
        who, row = store.owner_and_card_row(token, found_id)
        admitted(who)
        if row is None:
            raise ApiError(404, *NOT_FOUND)
        return JSONResponse(card(row))  # already plain JSON values: no encoder pass over it

    @app.patch("/records/{raw_id}", tags=["records"])
    def edit(raw_id: str, changes: inputs.Edit, who: Owner):
        """The owner's edit of title, summary and topics; the pipeline never writes these."""
        if not store.edit(record_id(raw_id), who["id"], title=changes.title, summary=changes.summary,
                          topics=changes.topics):
            raise ApiError(404, *NOT_FOUND)
        return own_card(raw_id, who)

    @app.get("/records/{raw_id}/text", tags=["records"])
    def text(raw_id: str, who: Owner, format: str = Query(default="txt", pattern="^(" + "|".join(FORMATS) + ")$")):
        """The text once the record is done; 409 with the stage (and halt) until then."""
        row = store.transcript(record_id(raw_id), who["id"])
        if row is None:
            raise ApiError(404, *NOT_FOUND)
        if row["stage"] != "done":
            current = own_card(raw_id, who)
            raise ApiError(409, "not_done", f"the record is at stage {row['stage']}, not done",
                           stage=row["stage"], halt=current["halt"])
        body = render(format, row["transcript"], row["segments"], row["duration_seconds"])
        return Response(body, media_type=MEDIA_TYPES[format])

    from web import owner_api  # the owner's audio and deletion, in a module of their own
    app.include_router(owner_api.router(store, owner, record_id))
    from web import admin, operators  # the operator's panel API, behind operator tokens
    app.include_router(admin.router(store, operators.bearer_operator(store), record_id))
    from web import openai_compat  # POST /v1/audio/transcriptions in OpenAI's shape
    app.include_router(openai_compat.router(store, settings, owner))
    return app

