"""The pipeline at archive scale: an archive of N records for M owners, and what a
claim, a card and a list cost in it, how long the orphan sweep takes, how many lease renewals
are HOT updates, and the claim order of the fairness scenario. Prints a table, writes
bench/results/scale.json.

    TRANSCRIBER_DATABASE_URL=postgresql://… .venv/bin/python -m bench.scale
        [--records 1000000] [--owners 10000] [--waiting 20000] [--samples 300] [--paused 10000]

The archive is synthetic, built by the server (bench/queries.sql): every record has a small blob of its
own (one 64-byte chunk), done records a text of ~200 characters; `waiting` of them are at stage
created, accepted over the owners round robin so each takes its turn. Figures:
- claim p50/p99: `Store.claim` as a worker calls it, client wall time, `samples` claims;
- claim, server ms: EXPLAIN ANALYZE of the claim statement (generic plan, rolled back) with
  `paused` records at the head (waiting out a retry pause), for the claim now (held, retries,
  then new work by turn), one taking new work in queued_at order without fair turns, and one
  served by a single index in available_at order (which moves with every lease renewal), their
  indexes side by side in the same table;
- card and list p99: `Store.card_row` and `Store.list_card_rows` (a page of 20) of sampled
  records and owners;
- sweep: one full `Store.sweep_orphan_blobs` pass over every blob (none is an orphan);
- renewals: the HOT share of 500 renewals (bench.claim_index's measure);
- fairness: from an idle queue, owner A uploads 30 recordings, then owner B one; the order one
  claimer takes them in. Byte and WAL figures per audio hour are bench.storage's.
"""
from __future__ import annotations

import argparse
import time

from bench import statements
from bench.claim_index import claim_cost, claim_statement, hot_ratio
from bench.common import percentile, report
from bench.scratch import scratch_database
from db import Database, Store
from domain.policy import StepPolicy
from domain.stages import Step

POLICY = StepPolicy(lease_seconds=600, time_limit_seconds=86400 * 30, max_attempts=3, backoff_seconds=10)
DESIGNS = {"now (fair turns)": None, "queued_at order without fair turns": "bench_picks_queued",
           "one index in available_at order": "bench_picks_available"}


def timed(work) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def build(db: Database, records: int, owners: int, waiting: int) -> float:
    """The archive; seconds it took."""
    started = time.monotonic()
    with db.transaction() as conn:
        conn.execute(statements.query("bench_scale_owners"), {"count": owners})
        conn.execute(statements.query("bench_scale_blobs"), {"count": records})
        first = conn.execute(statements.query("bench_scale_blob_ids")).fetchone()["first"]
        conn.execute(statements.query("bench_scale_done"), {"count": records - waiting, "owners": owners, "first_blob": first})
        conn.execute(statements.query("bench_scale_waiting"), {"count": waiting, "owners": owners,
                                                    "first_blob": first + records - waiting})
    with db.connection() as conn:
        conn.execute(statements.query("bench_analyze"))
    return time.monotonic() - started


def fairness(store: Store, db: Database) -> str:
    """The claim order of A's 30 uploads and B's one, from an idle queue: 'A A B A …'."""
    with db.transaction() as conn:
        conn.execute(statements.query("bench_scale_settle"))
    a, b = (store.owner_by_name(name)["id"] for name in ("scale-1", "scale-2"))
    names = {store.accept(a, [b"a"], title="a"): "A" for _ in range(30)}
    names[store.accept(b, [b"b"], title="b")] = "B"
    order = [names[store.claim(Step.CONVERT, POLICY).record_id] for _ in range(31)]
    return " ".join(order[:6]) + f" … (B claimed at position {order.index('B') + 1} of 31)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--owners", type=int, default=10_000)
    parser.add_argument("--waiting", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--paused", type=int, default=10_000)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    from service import logs

    logs.configure(level="WARNING")
    rows: list[list] = []
    with scratch_database() as url, Database(url, max_size=4) as db:
        db.migrate()
        store = Store(db)
        rows.append(["build the archive (s)", round(build(db, args.records, args.owners, args.waiting), 1)])
        with db.connection() as conn:
            sample = conn.execute(statements.query("bench_scale_sample_ids"), {"count": args.samples}).fetchall()
        claims = [timed(lambda: store.claim(Step.CONVERT, POLICY)) for _ in range(min(args.samples, args.waiting // 2))]
        cards = [timed(lambda: store.card_row(row["id"], row["owner_id"])) for row in sample]
        lists = [timed(lambda: store.list_card_rows(row["owner_id"], 20, 0)) for row in sample]
        rows += [["claim p50 / p99 (ms)", f"{percentile(claims, 0.5):.2f} / {percentile(claims, 0.99):.2f}"],
                 ["card p99 (ms)", round(percentile(cards, 0.99), 2)],
                 ["list p99 (ms, a page of 20)", round(percentile(lists, 0.99), 2)],
                 ["500 lease renewals: HOT share", round(hot_ratio(db, 500), 3)]]
        sweep = timed(lambda: store.sweep_orphan_blobs(3600))
        rows.append([f"orphan sweep over {args.records} blobs (s)", round(sweep / 1000, 2)])
        owner = store.owner_by_name("scale-3")["id"]
        blob, _ = store.store_blob([b"x"], "application/octet-stream")
        with db.transaction() as conn:
            conn.execute(statements.query("bench_pause_head"), {"owner_id": owner, "blob_id": blob, "count": args.paused})
            conn.execute(statements.query("bench_design_queued"))
            conn.execute(statements.query("bench_design_available"))
        with db.connection() as conn:
            conn.execute(statements.query("bench_analyze"))
        for design, parts in DESIGNS.items():
            ms, buffers = claim_cost(db, 30, claim_statement(parts))
            rows.append([f"claim, server ms (buffers), {args.paused} paused at the head: {design}",
                         f"{ms:.3f} ({buffers:.0f})"])
        rows.append(["fairness: claim order of A's 30 then B's 1", fairness(store, db)])
    report("scale", ["figure", "value"], rows, vars(args), write=not args.no_write)


if __name__ == "__main__":
    main()
