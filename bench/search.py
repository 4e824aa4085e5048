"""Search over a large archive: 1,000,000 segments (1,000 audio hours) for 1,000
owners and one owner of 100,000 segments (100 hours); p50/p95 of a one-word, a two-word, a phrase,
a prefix and a common-word query for a typical owner and for the heavy one, one-word queries kept
to a speaker by label and by name, the index's size per audio hour, and what indexing an hour of
transcript adds to the save. Prints a table.

    TRANSCRIBER_DATABASE_URL=postgresql://… .venv/bin/python -m bench.search [--segments 1000000]

The archive is filled server-side (bench_search_fill: segments of 3.6 s, 10-16 words each from a
vocabulary of pseudo-words with a Zipf-like frequency, English configuration) straight into the
search rows the done save writes, then analysed. Queries go through the service's own search
(`Store.search`: the count and a page of 20 with snippets), each for a random owner, its words
drawn from a segment of that owner's (so most have hits): a word, two words of one segment, two
adjacent words in quotes, the first four letters of a word, and one of the ten words most
frequent in the sampled segments (the hard case: tens of thousands of the heavy owner's
segments match, so the count is capped, see `domain.search.MAX_COUNTED`). Indexing is measured on one more
record of an audio hour saved by the service's own writes (a claim, a checkpoint per 30 s window,
the done save) on top of the full archive: the done save runs under EXPLAIN ANALYZE, which times
its indexing part (the `headed` and `indexed` CTEs, which write the search rows, and any trigger
on them) apart from the rest; the merge of the hour's keys from the index's pending list into
the index (which a later insert or vacuum does) is timed right after and counted as indexing.
Then the five kinds of query are timed again on that hour's record alone (rows ", an hour's
record"): its windows hold timed words, which each hit of a page reads to say when its first
matched word was said (`at`); the archive's rows have no windows to read.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
from psycopg import sql

from bench import statements
from bench.common import percentile, report
from bench.scratch import scratch_database
from bench.storage import save_window, window_segments
from db import Database, Store
from db.pipeline import _save_statement
from db.queries import query
from domain.asked import Asked
from domain.policy import StepPolicy
from domain.stages import Step
from service import logs
from service.search import hits

SEGMENT_SECONDS = 3.6         # 1,000,000 segments = 1,000 audio hours
SEGMENTS_PER_RECORD = 100     # a 6-minute recording
FILL_BATCH_RECORDS = 500
KINDS = ("one word", "two words", "phrase", "prefix", "common word")
COMMON = 10                   # the common words: the sampled segments' most frequent
SYLLABLES = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"] + ["ar", "en", "or", "is", "ul"]
VOCABULARY = 20_000           # distinct words of the archive
# the hour's record is claimed as a worker would; nothing here waits out a lease or a retry
POLICY = StepPolicy(lease_seconds=60, time_limit_seconds=3600, max_attempts=3, backoff_seconds=10)


def vocabulary(rng: random.Random, size: int) -> list[str]:
    """Pseudo-words of 1-4 syllables, distinct (the hour's record's; the archive's are drawn
    server-side, bench_search_fill)."""
    syllables = SYLLABLES
    found: dict[str, None] = {}
    while len(found) < size:
        found["".join(rng.choice(syllables) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))] = None
    return list(found)


def fill(db: Database, blob_id: int, owners: int, segments: int, heavy: int) -> float:
    """The archive: owners (o1, o2, …, and one called heavy), their done records, the records'
    search rows. Returns seconds."""
    began = time.perf_counter()
    with db.connection() as conn:
        conn.execute(statements.query("bench_search_owners"), {"count": owners})
        conn.execute(query("create_owner"), {"name": "heavy", "token_hash": "bench-heavy"})
        first = 2  # record 1 is the hour's
        for prefix, per_owner in (("o", max(1, segments // owners // SEGMENTS_PER_RECORD)),
                                  ("heavy", heavy // SEGMENTS_PER_RECORD)):
            last = conn.execute(statements.query("bench_search_records"), {"blob_id": blob_id, "per_owner": per_owner,
                                                                 "language": "en", "prefix": prefix}).fetchone()["last"]
            for start in range(first, (last or 0) + 1, FILL_BATCH_RECORDS):
                conn.execute(statements.query("bench_search_fill"), {
                    "first": start, "last": start + FILL_BATCH_RECORDS, "per_record": SEGMENTS_PER_RECORD,
                    "seconds": SEGMENT_SECONDS, "syllables": SYLLABLES, "words": VOCABULARY})
                print(f"  filled records {start}-{min(last, start + FILL_BATCH_RECORDS - 1)} of {last}",
                      file=sys.stderr, flush=True)
            first = (last or first - 1) + 1
        conn.execute(statements.query("bench_search_analyze"))
    return time.perf_counter() - began


def hour_record(store: Store) -> tuple[int, int]:
    """The record (id 1) whose saves are measured, accepted first: its id and its audio blob,
    which the archive's records share (a record needs one; search never reads it)."""
    store.add_owner("bench")
    owner_id = store.owner_by_name("bench")["id"]
    record_id = store.accept(owner_id, [b"bench audio"], source_name="hour.bin", asked=Asked(language="en"))
    return record_id, store.original_audio(record_id, owner_id)["blob_id"]


def queries(db: Database, count: int, rng: random.Random, owner_id: int | None = None,
            percent: float = 1.0) -> dict[str, list[tuple[int, str]]]:
    """`count` (owner id, query text) of each kind, drawn from sampled segments (of one owner's,
    or any)."""
    with db.connection() as conn:
        samples = conn.execute(statements.query("bench_search_samples"),
                               {"percent": percent, "count": count, "owner_id": owner_id}).fetchall()
    made: dict[str, list[tuple[int, str]]] = {kind: [] for kind in KINDS}
    frequency = Counter(word for sample in samples for word in sample["body"].split())
    common = [word for word, _ in frequency.most_common(COMMON)]
    for sample in samples:
        owner, words = sample["owner_id"], sample["body"].split()
        if len(words) < 2:  # a window's last segment may hold one word: no two words to draw
            continue
        at = rng.randrange(len(words) - 1)
        made["one word"].append((owner, rng.choice(words) + " "))
        made["two words"].append((owner, " ".join(rng.sample(words, 2)) + " "))
        made["phrase"].append((owner, f'"{words[at]} {words[at + 1]}"'))
        made["prefix"].append((owner, rng.choice([w for w in words if len(w) >= 5] or words)[:4]))
        made["common word"].append((owner, rng.choice(common) + " "))
    return made


def server_cpu_ns(pids: list[int]) -> int | None:
    """CPU time the database's server processes `pids` have run, in nanoseconds, from the
    scheduler's own count (/proc/PID/schedstat: fine-grained, unlike /proc/PID/stat's ticks);
    None when the server is not on this machine. On a machine shared with other work a query's
    wall time is mostly waiting for a core; its server CPU time is what it would take alone."""
    try:
        return sum(int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) for pid in pids)
    except (OSError, ValueError, IndexError):
        return None


def timed_queries(db: Database, store: Store, made: dict[str, list[tuple[int, str]]],
                  speaker: str | None = None) -> list[list]:
    with db.connection() as conn:
        pids = [row["pid"] for row in conn.execute(statements.query("bench_backends"))]
    rows = []
    for kind, pairs in made.items():
        seconds, cpu, found, capped = [], [], [], 0
        for owner, text in pairs:
            cpu_before, began = server_cpu_ns(pids), time.perf_counter()
            _, counted = hits(store, owner, text, limit=20, speaker=speaker)
            seconds.append(time.perf_counter() - began)
            cpu_after = server_cpu_ns(pids)
            if cpu_before is not None and cpu_after is not None:
                cpu.append((cpu_after - cpu_before) / 1e9)
            found.append(counted.total)
            capped += counted.capped
        rows.append([kind, len(seconds), round(percentile(seconds, 0.5) * 1000, 2),
                     round(percentile(seconds, 0.95) * 1000, 2), round(max(seconds) * 1000, 2),
                     round(percentile(cpu, 0.5) * 1000, 2) if cpu else None,
                     round(percentile(cpu, 0.95) * 1000, 2) if cpu else None,
                     round(sum(found) / len(found), 1), sum(1 for f in found if f) / len(found),
                     capped / len(found)])
    return rows


def by_speaker(db: Database, store: Store, heavy: int, typical: list[tuple[int, str]],
               heavy_made: list[tuple[int, str]]) -> list[list]:
    """One-word queries kept to a speaker, by label and by the name the owner gave it, against
    none: the one-word queries timed above, of the heavy owner and of typical ones, their records
    said by S1 and S2 in turn and S2 named (the heavy owner's 100,000 segments, and the typical
    owners' whose queries are timed)."""
    with db.connection() as conn:
        owners = sorted({owner for owner, _ in typical} | {heavy})
        conn.execute(statements.query("bench_search_speakers"), {"owners": owners, "name": "Dana"})
        conn.execute(statements.query("bench_search_merge"))  # the rows written again: their keys merged
        conn.execute(statements.query("bench_search_analyze"))
    rows = []
    for who, pairs in (("heavy owner", heavy_made), ("typical owner", typical)):
        timed_queries(db, store, {"warm": pairs[:10]}, "Dana")
        for speaker in (None, "S2", "Dana"):
            label = "no speaker" if speaker is None else "speaker=S2" if speaker == "S2" else "speaker=the name"
            rows += [[f"one word, {who}, {label}", *row[1:]] for row in timed_queries(db, store, {"one word": pairs},
                                                                                       speaker)]
    return rows


def index_an_hour(db: Database, store: Store, record_id: int, rng: random.Random, runs: int = 5) -> dict:
    """The record of an hour saved by the service's writes, on top of the archive; the done save
    under EXPLAIN ANALYZE, with its indexing part timed apart, `runs` times (each but the last
    rolled back; the medians). The index's pending list is emptied before each, and the hour's
    keys merged from it into the index right after, timed: that merge is indexing too, done by a
    later insert or by vacuum."""
    claim = store.claim(Step.CONVERT, POLICY)
    assert claim.record_id == record_id, "the scratch database has another record to work"
    assert store.save(claim, {"duration_seconds": 3600.0}, next_step=claim.step.next(speakers=False))
    claim = store.claim(Step.RECOGNIZE, POLICY)
    words = vocabulary(rng, 3000)
    with db.connection() as conn:
        pids = [row["pid"] for row in conn.execute(statements.query("bench_backends"))]
    cpu_before = server_cpu_ns(pids)
    began, segments = time.perf_counter(), 0
    for start in range(0, 3600, 30):
        window = window_segments(rng, words, float(start), 30.0)
        segments += len(window)
        assert save_window(store, claim, float(start), float(start + 30), window, 600)
    checkpoints = time.perf_counter() - began
    checkpoints_cpu = _cpu_ms(cpu_before, server_cpu_ns(pids))
    parse_cpu = parse_alone(db, pids, record_id)
    save = _save_statement(Step.RECOGNIZE, ("engine",)).decode()
    statement = statements.compose("bench_explain", statement=sql.SQL(save))
    params = {"f_engine": "bench", "id": record_id, "token": claim.token, "step": Step.RECOGNIZE.value,
              "target": Step.RECOGNIZE.target.value, "next_step": None, "saved_event": "advanced",
              "passages": None}
    measured: dict[str, list[float]] = {"done_ms": [], "indexing_ms": [], "merge_ms": [], "done_wall_ms": [],
                                        "done_cpu_ms": [], "merge_cpu_ms": []}
    for run in range(runs):
        with db.transaction() as conn:
            conn.execute(statements.query("bench_search_merge"))
            cpu_before, began = server_cpu_ns(pids), time.perf_counter()
            plan = conn.execute(statement, params).fetchone()["QUERY PLAN"][0]
            measured["done_wall_ms"].append((time.perf_counter() - began) * 1000)
            cpu_between, began = server_cpu_ns(pids), time.perf_counter()
            conn.execute(statements.query("bench_search_merge"))
            measured["merge_ms"].append((time.perf_counter() - began) * 1000)
            measured["done_cpu_ms"].append(_cpu_ms(cpu_before, cpu_between))
            measured["merge_cpu_ms"].append(_cpu_ms(cpu_between, server_cpu_ns(pids)))
            measured["indexing_ms"].append(
                sum(_cte_ms(plan["Plan"], name) for name in ("CTE headed", "CTE indexed")) + sum(
                    trigger["Time"] for trigger in plan.get("Triggers", []) if trigger["Relation"] == "search_rows"))
            measured["done_ms"].append(plan["Execution Time"])
            if run < runs - 1:
                raise psycopg.Rollback()
    return {"segments": segments, "checkpoints_s": checkpoints, "checkpoints_cpu_ms": checkpoints_cpu, "runs": runs,
            "parse_cpu_ms": parse_cpu,
            **{name: percentile(values, 0.5) for name, values in measured.items()}}


def parse_alone(db: Database, pids: list[int], record_id: int, runs: int = 7) -> float:
    """Server CPU ms of parsing the record's text into tsvectors as its search rows would be,
    nothing written (the median of `runs`, less reading the same text unparsed)."""
    measured: dict[bool, list[float]] = {True: [], False: []}
    with db.connection() as conn:
        for _ in range(runs):
            for parse in (False, True):
                before = server_cpu_ns(pids)
                conn.execute(statements.query("bench_search_parse"), {"id": record_id, "parse": parse})
                measured[parse].append(_cpu_ms(before, server_cpu_ns(pids)))
    return percentile(measured[True], 0.5) - percentile(measured[False], 0.5)


def _cpu_ms(before: int | None, after: int | None) -> float:
    return float("nan") if before is None or after is None else (after - before) / 1e6


def _cte_ms(node: dict, name: str) -> float:
    if node.get("Subplan Name") == name:
        return node["Actual Total Time"] * node.get("Actual Loops", 1)
    return sum(_cte_ms(child, name) for child in node.get("Plans", []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=1_000_000)
    parser.add_argument("--owners", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200, help="of each kind")
    parser.add_argument("--heavy", type=int, default=100_000, help="segments of one more owner (0: none)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    args = parser.parse_args()
    logs.configure(level="WARNING")
    rng = random.Random(args.seed)
    with scratch_database() as url, Database(url, max_size=2) as db:
        db.migrate()
        store = Store(db)
        record_id, blob_id = hour_record(store)
        filled = fill(db, blob_id, args.owners, args.segments, args.heavy)
        size = db.one(statements.query("bench_search_size"))
        made = queries(db, args.queries, rng)
        timed_queries(db, store, {kind: pairs[:10] for kind, pairs in made.items()})  # warm the cache
        rows = timed_queries(db, store, made)
        if args.heavy:
            heavy = store.owner_by_name("heavy")["id"]
            heavy_made = queries(db, args.queries // 2, rng, heavy, 10.0)
            heavy_rows = timed_queries(db, store, heavy_made)
            rows += [[f"{kind}, heavy owner", *row[1:]] for kind, row in zip(KINDS, heavy_rows)]
            typical = [(owner, text) for owner, text in made["one word"] if owner != heavy][: args.queries // 2]
            rows += by_speaker(db, store, heavy, typical, heavy_made["one word"])
        hour = index_an_hour(db, store, record_id, rng)
        # the hour's record is done now, saved as the service saves it: windows with timed words,
        # which each hit of a page reads to say when its word was said (`at`)
        hour_rows = timed_queries(db, store, queries(db, args.queries // 2, rng,
                                                     store.owner_by_name("bench")["id"], 100.0))
        rows += [[f"{kind}, an hour's record", *row[1:]] for kind, row in zip(KINDS, hour_rows)]
    hours = size["audio_seconds"] / 3600
    print(f"{size['segments']} segments, {hours:.0f} audio hours, {args.owners} owners; filled in {filled:.0f} s")
    report("search", ["query", "runs", "p50 ms", "p95 ms", "max ms", "server CPU p50 ms", "server CPU p95 ms",
                      "hits (mean)", "with hits", "capped"], rows,
           extra={"segments": size["segments"], "owners": args.owners, "size": size, "hour": hour},
           write=not args.no_write)
    mib = 1024 * 1024
    print(f"size per audio hour: {size['total_bytes'] / hours / 1024:.0f} kB in all "
          f"(rows with their tsvectors {size['heap_bytes'] / hours / 1024:.0f} kB, "
          f"the owner's keys {size['keys_bytes'] / hours / 1024:.1f} kB, "
          f"primary key {size['pkey_bytes'] / hours / 1024:.1f} kB); "
          f"{size['total_bytes'] / mib:.0f} MiB in all")
    indexing = hour["indexing_ms"] + hour["merge_ms"]
    unindexed = hour["done_ms"] - hour["indexing_ms"]
    print(f"an hour of transcript ({hour['segments']} segments, medians of {hour['runs']}): checkpoints "
          f"{hour['checkpoints_s']:.2f} s, done save {hour['done_ms']:.0f} ms of which indexing "
          f"{hour['indexing_ms']:.0f} ms, and the keys' merge into the index {hour['merge_ms']:.0f} ms; indexing adds "
          f"{100 * indexing / unindexed:.0f} % to the done save, "
          f"{100 * indexing / (hour['checkpoints_s'] * 1000 + unindexed):.1f} % to all the saves of the hour")
    # the same in server CPU time (the done save's split by its plan's share of indexing)
    cpu_indexing = hour["done_cpu_ms"] * hour["indexing_ms"] / hour["done_ms"] + hour["merge_cpu_ms"]
    cpu_unindexed = hour["done_cpu_ms"] * (1 - hour["indexing_ms"] / hour["done_ms"])
    print(f"in server CPU time: checkpoints {hour['checkpoints_cpu_ms']:.0f} ms, done save {hour['done_cpu_ms']:.0f} ms, "
          f"merge {hour['merge_cpu_ms']:.0f} ms; indexing {cpu_indexing:.0f} ms adds "
          f"{100 * cpu_indexing / (hour['checkpoints_cpu_ms'] + cpu_unindexed):.1f} % to all the saves of the hour")
    print(f"the parse alone (the hour's text into tsvectors, nothing written): {hour['parse_cpu_ms']:.0f} ms of server "
          f"CPU, {100 * hour['parse_cpu_ms'] / (hour['checkpoints_cpu_ms'] + cpu_unindexed):.1f} % of the saves: "
          f"the floor of an index kept by the saving statements")


if __name__ == "__main__":
    main()
