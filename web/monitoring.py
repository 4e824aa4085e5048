"""The addresses a monitor polls: /healthz (does the service and its database answer?) and
/metrics (Prometheus). /healthz needs no token (a yes or no). /metrics needs an operator's token
(`Authorization: Bearer`, Prometheus's `authorization: credentials`): it tells how busy the
service is and what halts, and each scrape costs the database a statement, so not everyone
who reaches the port may ask."""

from collections.abc import Callable

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, Response

from db import Store
from service import metrics
from web.health import DatabaseProbe


def router(store: Store, operator: Callable[..., dict]) -> APIRouter:
    routes = APIRouter(tags=["service"])
    database_probe = DatabaseProbe(store.db)

    @routes.get(
        "/metrics",
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
        dependencies=[Depends(operator)],
    )
    def prometheus_metrics():
        """Prometheus metrics: records per stage, halted by reason, waiting out a pause (counts the
        database keeps as records move, not a count of all records), and this process's claims,
        saves, refused writes, step durations and recognition real-time factor. An operator's
        token is needed (401 without)."""
        return Response(metrics.exposition(store), media_type=metrics.CONTENT_TYPE)

    @routes.get("/healthz")
    async def healthz():
        """200 `{status: ok, database: true}`, or within about 2 s whatever the database does,
        503 `{status: degraded, database: false, error: database_unavailable, message}`."""
        if await database_probe.check():
            return JSONResponse({"status": "ok", "database": True})
        return JSONResponse(
            {
                "status": "degraded",
                "database": False,
                "error": "database_unavailable",
                "message": f"the database did not answer within {database_probe.timeout:g}s",
            },
            status_code=503,
        )

    return routes
