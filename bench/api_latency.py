"""How quickly the HTTP API answers while the same process recognises speech. Prints a table.

    .venv/bin/python -m bench.api_latency [SECONDS_OF_AUDIO]     (default 120)

`transcriber up` serves the API and runs workers in one process. The recognizer holds the
interpreter lock while it decodes, so it is fed in small pieces; this measures what an owner
feels: GET /healthz latency, idle and during recognition.
"""
from __future__ import annotations

import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from audio.decode import BYTES_PER_SECOND
from bench.recordings import sample_pcm, sample_recording
from bench.scratch import scratch_database
from db import Database, Store
from service import config, logs
from transcriber.local import LocalPipeline
from web.app import create_app


def latencies(client: httpx.Client, count: int) -> list[float]:
    found = []
    for _ in range(count):
        started = time.perf_counter()
        client.get("/healthz").raise_for_status()
        found.append((time.perf_counter() - started) * 1000)
        time.sleep(0.02)
    return found


def row(label: str, values: list[float]) -> None:
    values = sorted(values)
    p95 = values[int(len(values) * 0.95) - 1]
    print(f"{label:<22} {len(values):>6} {statistics.median(values):>8.1f} {p95:>8.1f} {values[-1]:>8.1f}")


def main(seconds: int) -> None:
    logs.configure(level="ERROR")
    settings = config.load({"TRANSCRIBER_TICK_SECONDS": "0.2"})
    with scratch_database() as url, Database(url, max_size=20) as db, tempfile.TemporaryDirectory() as folder:
        db.migrate()
        store = Store(db)
        token = store.add_owner("bench")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(create_app(store, settings), host="127.0.0.1", port=port,
                                               log_level="error"))
        threading.Thread(target=server.run, daemon=True).start()
        while not server.started:
            time.sleep(0.05)
        client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60,
                              headers={"Authorization": f"Bearer {token}"})
        print(f"{'GET /healthz':<22} {'calls':>6} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
        row("idle", latencies(client, 100))
        repeat = max(1, round(seconds / (len(sample_pcm()) / BYTES_PER_SECOND)))
        path = sample_recording(Path(folder) / "long.flac", "flac", repeat=repeat)
        with path.open("rb") as handle:
            record = client.post("/records", files={"file": handle}).json()["id"]
        with LocalPipeline(store, settings):
            while client.get(f"/records/{record}").json()["stage"] != "converted":
                time.sleep(0.05)
            during = []
            while client.get(f"/records/{record}").json()["stage"] != "done":
                during += latencies(client, 10)
        row("during recognition", during)
        server.should_exit = True


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 120)
