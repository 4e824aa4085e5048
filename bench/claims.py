#!/usr/bin/env python3
"""Claim-and-save throughput of the queue, by number of concurrent claimers. Prints a table.

    .venv/bin/python bench/claims.py [RECORDS]      (default 2000)

Uses TRANSCRIBER_DATABASE_URL's server if set, else the embedded one under TRANSCRIBER_HOME;
each row runs in a fresh scratch database that is dropped afterwards.
"""
from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scratch import scratch_database  # noqa: E402  (sets up the import path)

from db import Database, Store  # noqa: E402
from domain.claims import NO_WORK  # noqa: E402
from domain.policy import StepPolicy  # noqa: E402
from domain.stages import Step  # noqa: E402

POLICY = StepPolicy(lease_seconds=60, time_limit_seconds=3600, max_attempts=3, backoff_seconds=1)


def run(url: str, records: int, claimers: int) -> float:
    with Database(url, max_size=claimers + 2) as db:
        db.migrate()
        store = Store(db)
        store.add_owner("bench")
        owner = store.owner_by_name("bench")["id"]
        for _ in range(records):
            store.accept(owner, [b"x"])
        barrier = threading.Barrier(claimers + 1)

        def claimer():
            barrier.wait()
            while (claim := store.claim(Step.CONVERT, POLICY)) is not NO_WORK:
                assert store.save_result(claim, {"duration_seconds": 1.0})

        threads = [threading.Thread(target=claimer) for _ in range(claimers)]
        for thread in threads:
            thread.start()
        barrier.wait()
        started = time.perf_counter()
        for thread in threads:
            thread.join()
        return records / (time.perf_counter() - started)


def main(records: int) -> None:
    from transcriber import logs

    logs.configure(level="ERROR")
    print(f"{'claimers':>8} {'records':>8} {'claim+save per s':>17}")
    for claimers in (1, 2, 4, 8):
        with scratch_database() as url:
            print(f"{claimers:8d} {records:8d} {run(url, records, claimers):17.0f}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
