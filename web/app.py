"""The HTTP service's app, assembled: the error handlers, the middleware (browser sessions, the
token before the body, the body size limit) and the routers. Nothing here decides a request; each
router says what its addresses do.

Every address but /healthz needs a token (`web.auth`; /metrics an operator's); another owner's
record is answered exactly like a missing one. Errors are JSON `{"error": code, "message": text}`
(`web.errors`); no stack trace reaches a client, and no request body or transcript reaches the log.
"""

from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from db import Store
from service import resumable
from service.config import Settings
from service.intake import size_limit_message
from web import admin, errors, monitoring, openai_compat, pages, records, search, tus, voices
from web.auth import bearer_operator, bearer_owner
from web.body_limit import BodyLimit
from web.gate import TokenGate
from web.sessions import SessionAuth, Sessions

FORM_ROOM_BYTES = 64 * 1024
# where a body may be as large as an upload; any other body is an edit, a form or a command
UPLOADS = frozenset(
    {("POST", "/records"), ("POST", "/v1/audio/transcriptions"), ("POST", "/uploads"), ("PATCH", "/uploads/")}
)
OTHER_BODY_BYTES = 1 << 20


def create_app(store: Store, settings: Settings) -> FastAPI:
    sessions = Sessions(store, idle=settings.session_idle_seconds)

    uploads = resumable.Sweeper(store, settings)

    @asynccontextmanager
    async def sweeping_sessions(_app):
        """While the app serves, ended browser sessions are swept now and then, and so are
        resumable uploads (recordings cut short, uploads expired)."""
        sessions.start_sweeping()
        uploads.start()
        try:
            yield
        finally:
            uploads.stop()
            sessions.stop_sweeping()

    app = FastAPIOffline(
        title="Transcriber",
        version="0.1.0",
        lifespan=sweeping_sessions,
        description="Self-hosted speech-to-text over a durable PostgreSQL pipeline.",
    )
    errors.add_handlers(app)

    # The layers around the routes, outermost first: a session cookie stands for its account (the
    # owner's page at /, the panel at /admin); a request with a body and no valid token or
    # session is refused before the body is read; a body over the limit is refused as it comes,
    # whatever the method (the file plus room for the form around it at the two upload
    # addresses, a small JSON or form body anywhere else). None of them reads a body, so nothing
    # reads one before the limit counts it. (add_middleware puts each layer outside the ones
    # added before it.)
    app.add_middleware(
        BodyLimit,
        limit=settings.max_upload_bytes + FORM_ROOM_BYTES,
        message=size_limit_message(settings),
        small=OTHER_BODY_BYTES,
        large_at=UPLOADS,
    )
    app.add_middleware(TokenGate, store=store, exempt=pages.FORMS)
    app.add_middleware(SessionAuth, sessions=sessions, exempt=pages.FORMS)
    app.mount("/ui", StaticFiles(directory=pages.STATIC), name="ui")
    app.include_router(pages.router(store, sessions))

    owner = bearer_owner(store)
    app.include_router(monitoring.router(store, bearer_operator(store)))
    app.include_router(records.router(store, settings, owner))
    app.include_router(tus.router(store, settings, owner))
    app.include_router(search.router(store, owner))
    app.include_router(voices.router(store, owner))
    app.include_router(admin.router(store, bearer_operator(store)))
    app.include_router(openai_compat.router(store, settings, owner))
    return app
