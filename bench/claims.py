"""The claim cycle side by side: the service's claim path against bare psycopg issuing the same
statements, at 1, 2, 4 and 8 concurrent claimers, in one run. Prints a table, writes
bench/results/claims.json.

    .venv/bin/python -m bench.claims [--records N] [--runs R]      (defaults 2000, 3)

One cycle is what a worker does around its step: claim a record's convert step, read it, save
the result with the next step queued — `Store.claim`, `Store.read_for_step`, `Store.save` for the
service; for bare psycopg, one autocommit connection per claimer thread executing the same three
statements (the same SQL text, the same parameters); for procrastinate (when installed:
`pip install .[bench]`), its own worker (`run_worker_async(concurrency=N, wait=False)`: fetch a
job, run a task that does nothing, finish the job) over N jobs deferred beforehand, in its own
tables in the same scratch database. Each figure is the median of R runs; the two sides
alternate within every run, so a noisy neighbour weighs on both, and each ratio is the median of
the per-run ratios. CPU is this process's CPU per cycle (the database server's is not in it).

Uses TRANSCRIBER_DATABASE_URL's server if set, else the embedded one under TRANSCRIBER_HOME,
in a scratch database that is dropped afterwards.
"""
from __future__ import annotations

import argparse
import threading
import time

import psycopg

from bench import statements
from bench.common import median, report
from bench.scratch import scratch_database
from db import Database, Store
from db.pipeline import _save_statement
from db.queries import text
from domain import holders
from domain.claims import NO_WORK
from domain.policy import StepPolicy
from domain.stages import Step

POLICY = StepPolicy(lease_seconds=60, time_limit_seconds=3600, max_attempts=3, backoff_seconds=1)
CLAIMERS = (1, 2, 4, 8)
FIELDS = {"duration_seconds": 1.0}
STEP = Step.CONVERT
NEXT_STEP = STEP.next(speakers=False)


def fill(db: Database, owner: int, blob: int, records: int) -> None:
    with db.transaction() as conn:
        conn.execute(statements.query("bench_reset"))
        conn.execute(statements.query("bench_fill"), {"owner_id": owner, "blob_id": blob, "count": records})
    with db.transaction() as conn:
        conn.execute(statements.query("bench_analyze"))


def together(claimers: int, body) -> float:
    """Run `body()` on `claimers` threads released at once; the wall seconds until all end."""
    barrier = threading.Barrier(claimers + 1)

    def run():
        barrier.wait()
        body()

    threads = [threading.Thread(target=run) for _ in range(claimers)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def service_cycles(store: Store) -> None:
    while service_cycle(store):
        pass


def service_cycle(store: Store) -> bool:
    """One cycle as `actors.work.run_once` makes it: its statements on one pinned connection."""
    with store.db.pinned():
        claim = store.claim(STEP, POLICY)
        if claim is NO_WORK:
            return False
        store.read_for_step(claim)
        assert store.save(claim, FIELDS, next_step=NEXT_STEP)
        return True


def bare_statements() -> tuple[bytes, bytes, bytes]:
    """The service's claim, read and save of the step, as the very text it sends."""
    return text("claim"), text("read_for_step"), _save_statement(STEP, tuple(sorted(FIELDS)))


def bare_cycles(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        claim, read, save = bare_statements()
        params = {"step": STEP.value, "lease_seconds": POLICY.lease_seconds,
                  "time_limit_seconds": POLICY.time_limit_seconds, "holder": holders.this_process()}
        while (row := conn.execute(claim, params).fetchone()) is not None:
            conn.execute(read, {"id": row[0], "step": STEP.value}).fetchone()
            saved = conn.execute(save, {"id": row[0], "token": row[1], "step": STEP.value,
                                        "target": STEP.target.value, "next_step": NEXT_STEP.value,
                                        "saved_event": "advanced", "f_duration_seconds": 1.0}).fetchone()
            assert saved is not None


def procrastinate_side(url: str):
    """A procrastinate app on its own schema (applied once), or None when it is not installed."""
    try:
        import procrastinate
    except ImportError:
        return None
    import asyncio
    import logging

    logging.getLogger("procrastinate").setLevel(logging.ERROR)  # its advice on where apps live
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=url, min_size=1, max_size=max(CLAIMERS) + 2))

    @app.task(name="step")
    async def step(record: int) -> None:  # the job's body: nothing, like the cycle's step
        return None

    async def apply_schema():
        async with app.open_async():
            await app.schema_manager.apply_schema_async()

    asyncio.run(apply_schema())
    return app, step


def procrastinate_cycles(side, claimers: int, records: int) -> tuple[float, float]:
    """Defer `records` jobs (not timed, like the fill), then time one worker of `claimers`
    concurrent jobs fetching and finishing them all; cycles per second and CPU us per cycle."""
    import asyncio

    app, step = side

    async def run() -> tuple[float, float]:
        async with app.open_async():
            for first in range(0, records, 500):
                await step.batch_defer_async(*({"record": n} for n in range(first, min(first + 500, records))))
            cpu, started = time.process_time(), time.perf_counter()
            await app.run_worker_async(concurrency=claimers, wait=False, install_signal_handlers=False,
                                       listen_notify=False)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        return records / seconds, cpu / records * 1e6

    return asyncio.run(run())


def measure(db: Database, store: Store, url: str, side: str, claimers: int, owner: int, blob: int,
            records: int) -> tuple[float, float]:
    """Cycles per second and client CPU microseconds per cycle of one run."""
    fill(db, owner, blob, records)
    cpu = time.process_time()
    if side == "service":
        seconds = together(claimers, lambda: service_cycles(store))
    else:
        seconds = together(claimers, lambda: bare_cycles(url))
    cpu = time.process_time() - cpu
    return records / seconds, cpu / records * 1e6


def configure_logging() -> None:
    """The service's own level and line format, written where it costs nothing to keep."""
    import os

    from loguru import logger

    from service import logs

    logs.configure(level="INFO", stderr=False)
    logger.add(open(os.devnull, "w"), level="INFO", format=logs._FORMAT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--claimers", type=int, nargs="+", default=list(CLAIMERS),
                        help="the numbers of concurrent claimers to measure (default 1 2 4 8)")
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    configure_logging()
    results: dict[tuple[str, int], list[tuple[float, float]]] = {}
    with scratch_database() as url, Database(url, max_size=max(CLAIMERS) + 2) as db:
        db.migrate()
        store = Store(db)
        store.add_owner("bench")
        owner = store.owner_by_name("bench")["id"]
        blob, _ = store.store_blob([b"x"], "application/octet-stream")
        other = procrastinate_side(url)
        for run in range(args.runs):
            for claimers in args.claimers:
                sides = ("bare", "service") if run % 2 == 0 else ("service", "bare")
                for side in sides:
                    results.setdefault((side, claimers), []).append(
                        measure(db, store, url, side, claimers, owner, blob, args.records))
                if other is not None:
                    results.setdefault(("procrastinate", claimers), []).append(
                        procrastinate_cycles(other, claimers, args.records))
    rows = []
    for claimers in args.claimers:
        bare = [r[0] for r in results[("bare", claimers)]]
        service = [r[0] for r in results[("service", claimers)]]
        ratios = [s / b for s, b in zip(service, bare)]
        bare_cpu = [r[1] for r in results[("bare", claimers)]]
        service_cpu = [r[1] for r in results[("service", claimers)]]
        row = [claimers, round(median(bare)), round(median(service)), round(median(ratios), 2),
               round(median(bare_cpu)), round(median(service_cpu)),
               round(median([s / b for s, b in zip(service_cpu, bare_cpu)]), 2)]
        if other is not None:
            theirs = results[("procrastinate", claimers)]
            row += [round(median([r[0] for r in theirs])),
                    round(median([s / t[0] for s, t in zip(service, theirs)]), 2),
                    round(median([r[1] for r in theirs]))]
        rows.append(row)
    columns = ["claimers", "bare cycles/s", "service cycles/s", "service/bare",
               "bare CPU us/cycle", "service CPU us/cycle", "service/bare CPU"]
    note = "median of runs; the ratios are medians of per-run ratios"
    if other is None:
        note += "; procrastinate not installed (pip install .[bench]): its columns are left out"
        print("procrastinate is not installed (pip install .[bench]): its columns are left out")
    else:
        columns += ["procrastinate jobs/s", "service/procrastinate", "procrastinate CPU us/job"]
    report("claims", columns, rows, {"records": args.records, "runs": args.runs, "note": note},
           write=not args.no_write)


if __name__ == "__main__":
    main()
