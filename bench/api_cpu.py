"""Server CPU per HTTP request: the service's API against a bare Starlette app running the same
statement on the same pool, side by side. Prints a table, writes bench/results/api_cpu.json.

    .venv/bin/python -m bench.api_cpu [--requests N] [--runs R]      (defaults 2000, 3)

Each server runs alone in a process of its own under uvicorn (as `transcriber serve` runs it);
the client sends N requests one after another and the server process's CPU time over them is
read from /proc. Requests: GET /records/{id} with a bearer token (the service checks the token
and reads the card in one statement; the bare app runs that statement and returns the row), and
GET /healthz (one `SELECT 1`). The two servers alternate within every run; figures are medians.
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.common import ROOT, median, report
from bench.scratch import scratch_database

TICKS = os.sysconf("SC_CLK_TCK")


def bare_app(url: str):
    """Starlette alone: the same statements on the same pool, no framework around them."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from db import Database
    from db.accounts import hash_token
    from db.queries import query

    db = Database(url, max_size=10)

    def card(request):
        token = request.headers.get("authorization", "").partition(" ")[2]
        row = db.one(query("owner_card_by_token_hash"),
                     {"token_hash": hash_token(token), "id": int(request.path_params["raw_id"])})
        if row is None or row["id"] is None:
            return JSONResponse({"error": "not_found"}, status_code=404)
        return JSONResponse({k: str(v) for k, v in row.items() if k != "token_hash"})

    def healthz(request):
        return JSONResponse({"status": "ok", "database": db.one(query("ping"))["ok"] == 1})

    return Starlette(routes=[Route("/records/{raw_id}", card), Route("/healthz", healthz)])


def serve(kind: str, url: str, port: int) -> None:
    import uvicorn

    from service import config, logs

    logs.configure(level="WARNING")
    if kind == "service":
        from db import Database, Store
        from web.app import create_app

        app = create_app(Store(Database(url, max_size=20)), config.load())
    else:
        app = bare_app(url)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(kind: str, url: str, paths: dict[str, str], token: str, requests: int) -> dict[str, float]:
    """Server CPU microseconds per request, per address."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", __spec__.name, "--serve", kind, url, str(port)], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"})
        deadline = time.monotonic() + 60
        while True:
            try:
                client.get("/healthz")
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.1)
        found = {}
        for name, path in paths.items():
            for _ in range(50):  # warm: prepared statements, imports, pool
                client.get(path).raise_for_status()
            before = cpu_seconds(server.pid)
            for _ in range(requests):
                client.get(path)
            found[name] = (cpu_seconds(server.pid) - before) / requests * 1e6
        return found
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    parser.add_argument("--serve", nargs=3, metavar=("KIND", "URL", "PORT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], args.serve[1], int(args.serve[2]))
        return
    from db import Database, Store
    from service import logs

    logs.configure(level="WARNING")
    runs: list[dict[str, dict[str, float]]] = []
    with scratch_database() as url:
        with Database(url, max_size=2) as db:
            db.migrate()
            store = Store(db)
            token = store.add_owner("bench")
            record = store.accept(store.owner_by_name("bench")["id"], [b"x"], source_name="x")
        paths = {"GET /records/{id}": f"/records/{record}", "GET /healthz": "/healthz"}
        for run in range(args.runs):
            kinds = ("bare", "service") if run % 2 == 0 else ("service", "bare")
            runs.append({kind: measure(kind, url, paths, token, args.requests) for kind in kinds})
    rows = []
    for name in paths:
        bare = [r["bare"][name] for r in runs]
        service = [r["service"][name] for r in runs]
        rows.append([name, round(median(bare)), round(median(service)),
                     round(median([s / b for s, b in zip(service, bare)]), 2)])
    report("api_cpu", ["request", "bare Starlette CPU us", "service CPU us", "service/bare"], rows,
           {"requests": args.requests, "runs": args.runs}, write=not args.no_write)


if __name__ == "__main__":
    main()
