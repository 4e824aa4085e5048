"""The addresses a monitor polls: /healthz (does the service and its database answer?) and
/metrics (Prometheus). Neither needs a token: they give counts and a yes or no, nothing of any
owner's."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from db import Store
from service import metrics
from web.health import DatabaseProbe


def router(store: Store) -> APIRouter:
    routes = APIRouter(tags=["service"])
    database_probe = DatabaseProbe(store.db)

    @routes.get("/metrics", response_class=Response,
                responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
    def prometheus_metrics():
        """Prometheus metrics: records per stage, halted by reason, waiting out a pause (read from
        the database now), and this process's claims, saves, refused writes, step durations and
        recognition real-time factor. No token needed, like /healthz: counts only, nothing private."""
        return Response(metrics.exposition(store), media_type=metrics.CONTENT_TYPE)

    @routes.get("/healthz")
    async def healthz():
        """200 `{status: ok, database: true}`, or within about 2 s whatever the database does,
        503 `{status: degraded, database: false, error: database_unavailable, message}`."""
        if await database_probe.check():
            return JSONResponse({"status": "ok", "database": True})
        return JSONResponse({"status": "degraded", "database": False, "error": "database_unavailable",
                             "message": f"the database did not answer within {database_probe.timeout:g}s"},
                            status_code=503)

    return routes
