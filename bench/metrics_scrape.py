"""What one /metrics scrape costs the database with many records: the counts kept by triggers
(so that a scrape's work grows with the stages, not with the records) against a full count of
the records and their step rows. Prints a table, writes bench/results/metrics_scrape.json.

    .venv/bin/python -m bench.metrics_scrape [--done N] [--scrapes S]   (defaults 200000, 50)

The scratch database holds N done records, 1,000 waiting and 100 paused ones. Each scrape is
timed from the client (one round trip on a warm connection, the fold and the read in one
transaction for the kept counts); between kept-count scrapes 10 records move, as they would.
"""
from __future__ import annotations

import argparse
import time

from bench import statements
from bench.common import median, percentile, report
from bench.scratch import scratch_database
from db import Database, Store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--done", type=int, default=200_000)
    parser.add_argument("--scrapes", type=int, default=50)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    with scratch_database() as url, Database(url, max_size=2) as db:
        db.migrate()
        store = Store(db)
        store.add_owner("bench")
        owner = store.owner_by_name("bench")["id"]
        first = store.accept(owner, [b"x"], source_name="x")
        blob = store.read_record(first)["original_blob_id"]
        with db.transaction() as conn:
            params = {"owner_id": owner, "blob_id": blob}
            conn.execute(statements.query("bench_finish"), {**params, "count": args.done})
            conn.execute(statements.query("bench_fill"), {**params, "count": 1000})
            conn.execute(statements.query("bench_pause_head"), {**params, "count": 100})
            conn.execute(statements.query("bench_analyze"))
        store.queue_counts()  # the fill's changes folded once

        def full():
            with db.connection() as conn:
                return conn.execute(statements.query("bench_full_queue_count")).fetchall()

        def move_some():  # 10 records move between two scrapes, as they would
            with db.transaction() as conn:
                conn.execute(statements.query("bench_fill"), {"owner_id": owner, "blob_id": blob, "count": 10})

        def timed(scrape, between=lambda: None) -> list[float]:
            found = []
            for _ in range(args.scrapes):
                between()
                started = time.perf_counter()
                scrape()
                found.append((time.perf_counter() - started) * 1000)
            return found

        def by_key(rows) -> dict:
            return {(r["stage"], r["reason"]): r["records"] for r in rows}

        assert by_key(store.queue_counts()) == by_key(full())  # the same figures, by either way
        full_ms, kept_ms = timed(full), timed(store.queue_counts, move_some)
    rows = [["full count of records", round(median(full_ms), 2), round(percentile(full_ms, 0.95), 2)],
            ["kept counts, 10 moves folded", round(median(kept_ms), 2), round(percentile(kept_ms, 0.95), 2)]]
    print(f"{args.done} done records, {args.scrapes} scrapes each")
    report("metrics_scrape", ["scrape", "p50 ms", "p95 ms"], rows, {"done": args.done, "scrapes": args.scrapes},
           write=not args.no_write)


if __name__ == "__main__":
    main()
