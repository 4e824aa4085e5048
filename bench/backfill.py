"""What the backfill of passages costs when it has nothing to do: the look for done records owed
passages (`Store.passages_missing`, what `service.meaning.backfill` asks every ten minutes),
over an archive whose done records all have them. Prints a table, writes
bench/results/backfill.json.

    TRANSCRIBER_DATABASE_URL=postgresql://… .venv/bin/python -m bench.backfill
        [--records 25000,50000,100000,200000] [--passages-each 10] [--owed 1000] [--looks 5]

For each size a scratch archive (bench.scale's records, all done, of 1,000 owners), each record
with `passages-each` passages and as many segments with words; then `looks` whole looks from the
first id, timed at the client; then again with `owed` of the records owed their passages (a
batch found). The look reads the debts (passages_owed, 0012); before them it probed every done
English record's passages, and its time grew with the archive (BENCHMARKS.md keeps both)."""
from __future__ import annotations

import argparse
import time

from bench import statements
from bench.common import median, report
from bench.scale import build
from bench.scratch import scratch_database
from db import Database, Store
from service.meaning import BACKFILL_BATCH


def look(store: Store, looks: int, owed: int) -> float:
    """The median milliseconds of a look from the first id (a batch of the `owed`)."""
    times = []
    for _ in range(looks):
        started = time.perf_counter()
        assert len(store.passages_missing(0, BACKFILL_BATCH)) == min(owed, BACKFILL_BATCH)
        times.append((time.perf_counter() - started) * 1000)
    return median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", default="25000,50000,100000,200000")
    parser.add_argument("--passages-each", type=int, default=10)
    parser.add_argument("--owed", type=int, default=1000)
    parser.add_argument("--looks", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    from service import logs

    logs.configure(level="WARNING")
    rows: list[list] = []
    for records in (int(size) for size in args.records.split(",")):
        with scratch_database() as url, Database(url, max_size=2) as db:
            db.migrate()
            build(db, records, 1_000, 0)
            with db.transaction() as conn:
                conn.execute(statements.query("bench_backfill_passages"), {"each": args.passages_each})
                conn.execute(statements.query("bench_backfill_search_rows"), {"each": args.passages_each})
            for owed in (0, args.owed):
                if owed:
                    with db.transaction() as conn:
                        conn.execute(statements.query("bench_backfill_owe"), {"count": owed})
                with db.connection() as conn:
                    conn.execute(statements.query("bench_backfill_analyze"))
                rows.append([records, records * args.passages_each, owed, round(look(Store(db), args.looks, owed), 2)])
    report("backfill", ["done records", "passages", "owed", "look ms (median)"], rows, vars(args),
           write=not args.no_write)


if __name__ == "__main__":
    main()
