#!/usr/bin/env python3
"""What one claim costs the database as the table grows and with paused records at the head of
the queue, and the claim index's size. Prints a table, writes bench/results/claim_index.json.

    .venv/bin/python bench/claim_index.py [--done N] [--samples S] [--runs R]   (defaults 1000000, 50, 3)

Each case is timed by the server itself: EXPLAIN (ANALYZE, BUFFERS) of the claim statement as
workers send it (a prepared, generic plan), rolled back so every sample sees the same table.
Cases: 10k eligible records; the same with 10k paused records accepted before them (waiting out
a retry pause, so they sit at the head of the claim order); the same with N done records besides.
Then the size of the claim index per million claimable rows (measured on 100k) and with the N
done rows (which it does not hold). Figures are medians of S samples, then of R runs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scratch import scratch_database  # noqa: E402  (sets up the import path)

from common import median, report  # noqa: E402
from db import Database, Store  # noqa: E402
from db.queries import compose, query  # noqa: E402

PARAMS = {"stage": "created", "lease_seconds": 60, "time_limit_seconds": 86400 * 30}


def claim_cost(db: Database, samples: int) -> tuple[float, float]:
    """Median execution milliseconds and buffers touched of one claim."""
    times, buffers = [], []
    with db.transaction() as conn:
        conn.execute(query("bench_generic_plans"))
        statement = compose("bench_explain", statement=query("claim"))
        for _ in range(samples):
            with conn.transaction(force_rollback=True):
                plan = conn.execute(statement, PARAMS).fetchone()["QUERY PLAN"][0]
            times.append(plan["Execution Time"])
            buffers.append(plan["Plan"]["Shared Hit Blocks"] + plan["Plan"]["Shared Read Blocks"])
    return median(times), median(buffers)


def fill(db: Database, owner: int, blob: int, named: str, count: int) -> None:
    with db.transaction() as conn:
        conn.execute(query(named), {"owner_id": owner, "blob_id": blob, "count": count})
    with db.connection() as conn:
        conn.execute(query("bench_analyze"))


def one_run(url: str, done: int, samples: int) -> dict:
    found = {}
    with Database(url, max_size=2) as db:
        store = Store(db)
        owner = store.owner_by_name("bench")["id"]
        blob, _ = store.store_blob([b"x"], "application/octet-stream")
        with db.transaction() as conn:
            conn.execute(query("bench_reset"))
        fill(db, owner, blob, "bench_fill", 10_000)
        found["10k eligible"] = claim_cost(db, samples)
        fill(db, owner, blob, "bench_pause_head", 10_000)
        found["10k eligible + 10k paused at the head"] = claim_cost(db, samples)
        fill(db, owner, blob, "bench_finish", done)
        found[f"... + {done // 1000}k done"] = claim_cost(db, samples)
        with db.connection() as conn:
            sizes = conn.execute(query("bench_index_size")).fetchone()
        found["index bytes with done rows"] = sizes["claimable_bytes"]
        with db.transaction() as conn:
            conn.execute(query("bench_reset"))
        fill(db, owner, blob, "bench_fill", 100_000)
        with db.connection() as conn:
            found["index bytes per million claimable"] = conn.execute(query("bench_index_size")).fetchone()[
                "claimable_bytes"] * 10
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--done", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    from service import logs

    logs.configure(level="WARNING")
    with scratch_database() as url:
        with Database(url, max_size=2) as db:
            db.migrate()
            Store(db).add_owner("bench")
        runs = [one_run(url, args.done, args.samples) for _ in range(args.runs)]
    cases = [k for k in runs[0] if not k.startswith("index")]
    base = median([r[cases[0]][0] for r in runs])
    rows = []
    for case in cases:
        ms = median([r[case][0] for r in runs])
        rows.append([case, round(ms, 3), round(median([r[case][1] for r in runs])),
                     round(median([r[case][0] / r[cases[0]][0] for r in runs]), 2)])
    per_million = median([r["index bytes per million claimable"] for r in runs]) / 2**20
    with_done = median([r["index bytes with done rows"] for r in runs]) / 2**20
    print(f"records_claimable: {per_million:.1f} MB per million claimable rows; "
          f"{with_done:.2f} MB with 10k eligible + 10k paused + {args.done} done rows")
    report("claim_index", ["case", "claim ms", "buffers", "vs 10k eligible"], rows,
           {"index_mb_per_million_claimable": round(per_million, 1),
            "index_mb_with_done_rows": round(with_done, 2), "done_rows": args.done,
            "samples": args.samples, "runs": args.runs, "base_ms": base}, write=not args.no_write)


if __name__ == "__main__":
    main()
