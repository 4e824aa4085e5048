"""What one claim costs the database as the archive grows and with paused records at the head of
the queue, how many lease renewals are HOT updates, and the claim indexes' size: the claim as it
is now beside a claim served by one index in available_at order. Prints a table, writes
bench/results/claim_index.json.

    .venv/bin/python -m bench.claim_index [--done N] [--samples S] [--runs R] [--renewals K]
                                          (defaults 1000000, 50, 3, 500)

Each case is timed by the server itself: EXPLAIN (ANALYZE, BUFFERS) of the claim statement as
workers send it (a prepared, generic plan), rolled back so every sample sees the same table.
Cases: 10k eligible records; the same with 10k paused records accepted before them (waiting out
a retry pause, so they sit at the head of the claim order); the same with N done records besides.
Then K lease renewals (each its own transaction, over 10 claimed records lying apart: K/10 each,
as steps running for minutes renew) with all those rows in the table, and how many of them the
server counted as HOT updates. "now" is the service's claim: rows whose holder ran out of lease,
then retries by the end of their pause, then new work by turn, from three indexes none of which
holds the lease. "one index in available_at order" is the same database with those indexes (and
the turns) replaced by one index on the moment a row is or becomes claimable, the latest of its
entry, its lease's end and its retry pause's end: a renewal moves the row in it.
Figures are medians of S samples, then of R runs.
"""
from __future__ import annotations

import argparse
import time

from psycopg import sql

from bench import statements
from bench.common import median, report
from bench.scratch import scratch_database
from db import Database, Store
from db.queries import query

PARAMS = {"step": "convert", "lease_seconds": 60, "time_limit_seconds": 86400 * 30, "holder": "bench"}
# each design: its claim's pick (None: the service's own claim) and the statements that make its
# indexes out of the service's
DESIGNS = {"one index in available_at order": ("bench_picks_available",
                                                ("bench_design_alone", "bench_design_available")),
           "now": (None, ())}


def claim_statement(picks: str | None) -> sql.Composable:
    """The claim statement of a design: the service's own, or another design's `picks` (CTEs
    ending in `candidate`) followed by the service's own update and journal line, so that only
    the pick differs between the designs measured."""
    if picks is None:
        return query("claim")
    claim = query("claim").as_string(None)
    rest = sql.SQL(claim[claim.index("claimed AS ("):])
    return sql.SQL("WITH {picks}, {rest}").format(picks=statements.query(picks), rest=rest)


def claim_cost(db: Database, samples: int, claim) -> tuple[float, float]:
    """Median execution milliseconds and buffers touched of one claim."""
    times, buffers = [], []
    with db.transaction() as conn:
        conn.execute(statements.query("bench_generic_plans"))
        statement = statements.compose("bench_explain", statement=claim)
        for _ in range(samples):
            with conn.transaction(force_rollback=True):
                plan = conn.execute(statement, PARAMS).fetchone()["QUERY PLAN"][0]
            times.append(plan["Execution Time"])
            buffers.append(plan["Plan"]["Shared Hit Blocks"] + plan["Plan"]["Shared Read Blocks"])
    return median(times), median(buffers)


def hot_ratio(db: Database, renewals: int) -> float:
    """The share of `renewals` lease renewals (each its own transaction) that were HOT updates."""
    with db.transaction() as conn:
        claims = conn.execute(statements.query("bench_claim_some"), {"count": 10}).fetchall()
    counts = _settled_updates(db, None)
    with db.connection() as conn:
        for n in range(renewals):
            claim = claims[n % len(claims)]
            conn.execute(query("renew_lease"), {"id": claim["id"], "step": claim["step"], "token": claim["claim_token"],
                                                "lease_seconds": 60 + n, "progress_seconds": float(n)})
    after = _settled_updates(db, counts["updated"] + renewals)
    return (after["hot"] - counts["hot"]) / renewals


def _settled_updates(db: Database, expected: int | None) -> dict:
    """The server's update counts of step rows once they include `expected` updates (reported by
    every backend), or as they stand."""
    deadline = time.monotonic() + 60
    while True:
        with db.connection() as conn:
            conn.execute(statements.query("bench_flush_stats"))
        with db.connection() as conn:
            conn.execute(statements.query("bench_fresh_stats"))
            counts = conn.execute(statements.query("bench_updates")).fetchone()
        if expected is None or counts["updated"] >= expected or time.monotonic() > deadline:
            return counts
        time.sleep(0.2)


def fill(db: Database, owner: int, blob: int, named: str, count: int) -> None:
    with db.transaction() as conn:
        conn.execute(statements.query(named), {"owner_id": owner, "blob_id": blob, "count": count})
    with db.connection() as conn:
        conn.execute(statements.query("bench_analyze"))


def one_run(url: str, design: str, done: int, samples: int, renewals: int) -> dict:
    found = {}
    claim = claim_statement(DESIGNS[design][0])
    with Database(url, max_size=2) as db:
        store = Store(db)
        owner = store.owner_by_name("bench")["id"]
        blob, _ = store.store_blob([b"x"], "application/octet-stream")
        with db.transaction() as conn:
            conn.execute(statements.query("bench_reset"))
        fill(db, owner, blob, "bench_fill", 10_000)
        found["10k eligible"] = claim_cost(db, samples, claim)
        fill(db, owner, blob, "bench_pause_head", 10_000)
        found["10k eligible + 10k paused at the head"] = claim_cost(db, samples, claim)
        fill(db, owner, blob, "bench_finish", done)
        found[f"... + {done // 1000}k done"] = claim_cost(db, samples, claim)
        found["hot"] = hot_ratio(db, renewals)
        with db.connection() as conn:
            found["index bytes"] = conn.execute(statements.query("bench_index_size")).fetchone()["claimable_bytes"]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--done", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--renewals", type=int, default=500)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    from service import logs

    logs.configure(level="WARNING")
    runs: dict[str, list[dict]] = {design: [] for design in DESIGNS}
    for _ in range(args.runs):
        for design in DESIGNS:  # a database of its own each, the two alternating
            with scratch_database() as url:
                with Database(url, max_size=2) as db:
                    db.migrate()
                    Store(db).add_owner("bench")
                    with db.transaction() as conn:
                        for made in DESIGNS[design][1]:
                            conn.execute(statements.query(made))
                runs[design].append(one_run(url, design, args.done, args.samples, args.renewals))
    rows = []
    for design, found in runs.items():
        cases = [k for k in found[0] if k not in ("hot", "index bytes")]
        for case in cases:
            rows.append([design, case, round(median([r[case][0] for r in found]), 3),
                         round(median([r[case][1] for r in found])),
                         round(median([r[case][0] / r[cases[0]][0] for r in found]), 2)])
        rows.append([design, f"{args.renewals} lease renewals: HOT share", round(median([r["hot"] for r in found]), 3),
                     "", ""])
        rows.append([design, "claim index MB (all rows above)",
                     round(median([r["index bytes"] for r in found]) / 2**20, 2), "", ""])
    report("claim_index", ["design", "case", "claim ms / value", "buffers", "vs 10k eligible"], rows,
           {"done_rows": args.done, "samples": args.samples, "runs": args.runs, "renewals": args.renewals},
           write=not args.no_write)


if __name__ == "__main__":
    main()
