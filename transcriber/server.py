"""`transcriber serve` (the API alone) and `transcriber up` (everything in one process)."""

from __future__ import annotations

import signal

import uvicorn

from service.config import Settings
from service.runtime import check_engine, open_store


def run(settings: Settings, host: str, port: int, *, with_pipeline: bool) -> int:
    from web.app import create_app

    if with_pipeline:
        check_engine(settings)  # a model that cannot load stops `up` before anything is accepted
    store = open_store(settings, max_size=20)
    app = create_app(store, settings)
    pipeline = None
    if with_pipeline:
        from transcriber.local import LocalPipeline

        pipeline = LocalPipeline(store, settings)
    where = "the configured database" if settings.database_url else f"the embedded database in {settings.home}"
    print(f"Transcriber is up at http://{host}:{port} (API docs at /docs, OpenAPI at /openapi.json)", flush=True)
    print(f"Using {where}{'; workers and the scheduler run in this process' if pipeline else ''}.", flush=True)
    print(
        "Get an API token with: transcriber owner add NAME (same environment), then e.g.\n"
        f"  curl -H 'Authorization: Bearer TOKEN' -F file=@talk.mp3 http://{host}:{port}/records",
        flush=True,
    )
    print(
        f"Or open http://{host}:{port}/ in a browser and sign in with that token; the service panel is "
        f"at http://{host}:{port}/admin (token from: transcriber operator add NAME).",
        flush=True,
    )
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False))
    # The server stops on SIGTERM/SIGINT and then raises the signal again for the handler it
    # found; with these in place that second delivery is a no-op, so the workers below stop
    # cleanly (giving back their claims) before the process exits.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    try:
        server.run()
    finally:
        if pipeline is not None:
            pipeline.stop()
        store.db.close()
    return 0 if server.started else 1
