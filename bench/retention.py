"""Retention and quotas at archive sizes: what the retention pass, an owner's use,
the owners' list and the stored-bytes gauge cost. Prints a table.

    TRANSCRIBER_DATABASE_URL=postgresql://… .venv/bin/python -m bench.retention [--records 20000]

A scratch database gets `--owners` owners sharing `--records` done records (a small original
each, one chunk), half of them past a 30-day retention. Timed, each on the service's own code:
`Store.owner_usage` (what the card list and the quota show), `Store.owners` (`owner list`,
/admin), `Store.stored_bytes` (/metrics), then one `Store.expire_audio` over every due record
(its statements apart from deleting the blobs).
"""
from __future__ import annotations

import argparse
import time

from bench import statements
from bench.common import report
from bench.scratch import scratch_database
from db import Database, Store
from service import logs

DAY = 86400.0


def timed(work, runs: int = 5) -> tuple[float, object]:
    """The median wall time of `runs` calls in ms, and the last call's result."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times)[len(times) // 2], result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--owners", type=int, default=20)
    parser.add_argument("--chunk-kb", type=int, default=16)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    logs.configure(level="WARNING")
    with scratch_database() as url, Database(url) as db:
        db.migrate()
        store = Store(db)
        owners = []
        for n in range(args.owners):
            store.add_owner(f"owner{n}")
            owners.append(store.owner_by_name(f"owner{n}")["id"])
        each = args.records // args.owners
        with db.connection() as conn:
            for i, owner_id in enumerate(owners):
                for age in (60, 1):  # half past the retention, half not
                    conn.execute(statements.query("bench_fill_archive"), {"owner_id": owner_id, "count": each // 2,
                                                               "age_days": age, "chunk_bytes": args.chunk_kb * 1024})
            conn.execute(statements.query("bench_vacuum_analyze"))
        store.set_quota("owner0", seconds=1e9, size_bytes=10**12)
        rows = []
        ms, use = timed(lambda: store.owner_usage(owners[0]))
        rows.append(["owner_usage (one owner)", each, round(ms, 1)])
        ms, listed = timed(store.owners)
        rows.append(["owners (owner list, /admin)", args.records, round(ms, 1)])
        ms, stored = timed(store.stored_bytes)
        rows.append(["stored_bytes (/metrics)", args.records, round(ms, 1)])
        ms, _ = timed(lambda: store.check_quota(owners[0], 60.0, 1024), runs=9)
        rows.append(["check_quota (an upload weighed)", each, round(ms, 1)])
        start = time.perf_counter()
        done = store.expire_audio(30 * DAY)
        seconds = time.perf_counter() - start
        rows.append([f"expire_audio ({done.expired} records, blobs deleted)", args.records,
                     round(seconds * 1000, 1)])
        rows.append(["  per expired record", 1, round(seconds * 1000 / max(done.expired, 1), 2)])
    report("retention", ["operation", "records read", "ms (median)"], rows,
           extra={"records": args.records, "owners": args.owners, "chunk_kb": args.chunk_kb},
           write=not args.no_write)


if __name__ == "__main__":
    main()
