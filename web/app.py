"""The HTTP service's app, assembled: the error handlers, the middleware (body size limit, browser
sessions) and the routers. Nothing here decides a request; each router says what its addresses do.

Every address but /healthz needs a token (`web.auth`; /metrics an operator's); another owner's
record is answered exactly like a missing one. Errors are JSON `{"error": code, "message": text}`
(`web.errors`); no stack trace reaches a client, and no request body or transcript reaches the log.
"""

from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from db import Store
from service import inputs
from service.config import Settings
from service.intake import TooLarge, size_limit_message
from web import admin, errors, monitoring, openai_compat, pages, records
from web.auth import bearer_operator, bearer_owner
from web.sessions import SessionAuth, Sessions

FORM_ROOM_BYTES = 64 * 1024


def create_app(store: Store, settings: Settings) -> FastAPI:
    sessions = Sessions(store, idle=settings.session_idle_seconds)

    @asynccontextmanager
    async def sweeping_sessions(_app):
        """While the app serves, ended browser sessions are swept now and then."""
        sessions.start_sweeping()
        try:
            yield
        finally:
            sessions.stop_sweeping()

    app = FastAPIOffline(title="Transcriber", version="0.1.0", lifespan=sweeping_sessions,
                         description="Self-hosted speech-to-text over a durable PostgreSQL pipeline.")
    errors.add_handlers(app)

    # the owner's page at / and the panel at /admin: a session cookie stands for its account
    app.add_middleware(SessionAuth, sessions=sessions, exempt=pages.FORMS)
    app.mount("/ui", StaticFiles(directory=pages.STATIC), name="ui")
    app.include_router(pages.router(store, sessions))

    # a body over the limit (the file plus room for the form around it) is refused as it comes;
    # added last, so it is the outermost layer and sees the body before anything reads it
    app.add_middleware(inputs.BodyLimit, limit=settings.max_upload_bytes + FORM_ROOM_BYTES,
                       message=size_limit_message(settings), code=TooLarge.code)

    owner = bearer_owner(store)
    app.include_router(monitoring.router(store, bearer_operator(store)))
    app.include_router(records.router(store, settings, owner))
    app.include_router(admin.router(store, bearer_operator(store)))
    app.include_router(openai_compat.router(store, settings, owner))
    return app
