"""Search by meaning: quality, speed and cost. Prints tables (and writes bench/results/meaning.json).

    TRANSCRIBER_HOME=/tmp/bench-home .venv/bin/python -m bench.meaning \
        [--owners 1000] [--per-owner 1000] [--heavy 100000] [--samples 100] [--skip-speed] [--write-as NAME]

Needs the `meaning` extra and a server with pgvector: TRANSCRIBER_DATABASE_URL's if it has it,
else the embedded one under TRANSCRIBER_HOME (pgserver ships pgvector 0.6.2).

**Quality.** The archive of bench/meaning_corpus.py (the bench corpora's own English transcripts
and ten written meetings and calls, 95 segments in 15 records) saved by the service's own statements, one
owner, its passages embedded as the recognize step embeds them. Each of its 80 questions (70
paraphrasing a segment, 10 quoting one) goes through the service's search (`service.search.search`)
in each mode; Recall@5 is the share of questions with a hit among the first five that belongs to
the answering recording and covers the answering segment's time.

**Speed.** Passages of random embeddings (a hard case for the HNSW graph: every neighbour about as
far) for `--owners` owners of `--per-owner` passages and one owner of `--heavy`, the HNSW index
built over all of them (timed); then the questions' embeddings asked as `mode=meaning` and
`mode=both`, and as `mode=meaning` kept to a speaker heard in a quarter of the passages (S1) and
to one heard in one passage in a thousand (S9), through the service's search for sampled typical
owners and for the heavy one: p50/p95 wall, and CPU (this process's and the database server
processes', the server being on this machine). The query's embedding is timed apart (CPU, one
thread).

**Cost.** An hour of transcript (9,000 words: the written meetings' segments over again, 150
words a minute) cut into passages and embedded on one thread, against the CPU its recognition
takes (tiny.en int8, RTF CPU of BENCHMARKS.md, Accuracy); the passages' storage per audio hour
(table, TOAST, primary key, owner index and HNSW index, measured on the speed archive).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from bench import statements
from bench.common import percentile, report, table
from bench.meaning_corpus import QUESTIONS, RECORDINGS
from bench.scratch import scratch_database
from db import Database, Store
from domain.passages import Segment, cut
from domain.policy import StepPolicy
from domain.stages import Step
from service import logs

POLICY = StepPolicy(lease_seconds=60, time_limit_seconds=3600, max_attempts=3, backoff_seconds=10)
SECONDS_PER_WORD = 0.4  # 150 words a minute
RECOGNITION_RTF_CPU = 0.184  # tiny.en, int8, AMD EPYC (BENCHMARKS.md, Accuracy)
HOUR_WORDS = 9000
MODES = ("words", "meaning", "both")


def save_recording(store: Store, owner_id: int, name: str, texts: list[str]) -> tuple[int, list[tuple[float, float]]]:
    """A done record of `texts` (a segment each) saved as the pipeline saves it, its passages
    made by the recognize step's function; its id and its segments' times."""
    from service.meaning import record_passages

    segments, at = [], 0.0
    for text in texts:
        seconds = round(max(1.0, len(text.split()) * SECONDS_PER_WORD), 2)
        segments.append({"start": round(at, 2), "end": round(at + seconds, 2), "text": text, "words": []})
        at += seconds
    record_id = store.accept(owner_id, [b"not really audio"], title=name, source_name=f"{name}.wav")
    claim = store.claim(Step.CONVERT, POLICY)
    assert store.save(claim, {"duration_seconds": at}, next_step=Step.RECOGNIZE)
    claim = store.claim(Step.RECOGNIZE, POLICY)
    kept = {"segments": segments, "language": "en", "language_probability": None, "suppressed": [], "english": None}
    assert store.checkpoint(claim, 0.0, at, 60, kept, {"segments": len(segments)})
    passages = record_passages(store, record_id, "en")
    assert store.save(claim, {"engine": "bench"}, {"passages": passages}, next_step=None)
    return record_id, [(s["start"], s["end"]) for s in segments]


def quality(store: Store) -> list[dict]:
    from service.search import search

    store.add_owner("archive")
    owner_id = store.owner_by_name("archive")["id"]
    saved = {name: save_recording(store, owner_id, name, texts) for name, texts in RECORDINGS.items()}
    found: dict[tuple[str, str], list[bool]] = {}
    for question, name, segment, kind in QUESTIONS:
        record_id, times = saved[name]
        start, end = times[segment]
        for mode in MODES:
            hits = search(store, owner_id, question, mode=mode, limit=5).items
            right = any(
                hit["record"]["id"] == record_id
                and hit["start"] is not None
                and hit["start"] < end
                and (hit["end"] or hit["start"]) > start
                for hit in hits
            )
            found.setdefault((mode, kind), []).append(right)
            found.setdefault((mode, "all"), []).append(right)
    rows = []
    for kind in ("all", "paraphrase", "quote"):
        row = {"questions": kind, "count": len(found[("words", kind)])}
        for mode in MODES:
            outcomes = found[(mode, kind)]
            row[f"recall@5 {mode} %"] = round(100 * sum(outcomes) / len(outcomes), 1)
        rows.append(row)
    return rows


def hour_of_transcript() -> list[Segment]:
    written = [text for name, texts in RECORDINGS.items() if len(texts) >= 6 and name != "cards" for text in texts]
    segments, words, at, n = [], 0, 0.0, 0
    while words < HOUR_WORDS:
        text = written[n % len(written)]
        seconds = len(text.split()) * SECONDS_PER_WORD
        n += 1
        segments.append(Segment(n, at, at + seconds, text))
        at += seconds
        words += len(text.split())
    return segments


def cost() -> dict:
    from threadpoolctl import threadpool_limits

    from audio import meaning

    model = meaning.model()
    passages = cut(hour_of_transcript())
    bodies = [passage.body for passage in passages]
    with threadpool_limits(limits=1):
        model.embed(bodies[:4])
        started = time.process_time()
        model.embed(bodies)
        hour_cpu = time.process_time() - started
        costs = []
        for question, *_ in QUESTIONS:
            began = time.process_time()
            model.embed([question])
            costs.append(1000 * (time.process_time() - began))
    return {
        "hour passages": len(passages),
        "embed an hour, CPU s": round(hour_cpu, 2),
        "recognition of an hour, CPU s": round(3600 * RECOGNITION_RTF_CPU),
        "embedding / recognition %": round(100 * hour_cpu / (3600 * RECOGNITION_RTF_CPU), 2),
        "query embed CPU p50 ms": round(statistics.median(costs), 1),
        "query embed CPU p95 ms": round(percentile(costs, 0.95), 1),
        "passages per audio hour": len(passages),
    }


def speed(store: Store, owners: int, per_owner: int, heavy: int, samples: int) -> tuple[list[dict], dict]:
    from service.search import search

    db = store.db
    began = time.perf_counter()
    with db.connection() as conn:
        conn.execute(statements.query("bench_meaning_drop_index"))
        conn.execute(statements.query("bench_search_owners"), {"count": owners})
        conn.execute("INSERT INTO owners (name, token_hash) VALUES ('heavy', 'bench-heavy')")
        made = conn.execute(statements.query("bench_meaning_records"), {"per_owner": 1, "prefix": "o"}).fetchone()
        conn.execute(statements.query("bench_meaning_fill"),
                     {"first": made["first"], "last": made["last"], "per_record": per_owner})
        made = conn.execute(statements.query("bench_meaning_records"),
                            {"per_owner": max(1, heavy // 1000), "prefix": "heavy"}).fetchone()
        conn.execute(statements.query("bench_meaning_fill"),
                     {"first": made["first"], "last": made["last"], "per_record": min(heavy, 1000)})
    filled = time.perf_counter() - began
    began = time.perf_counter()
    with db.connection() as conn:
        conn.execute(statements.query("bench_meaning_build_memory"))
        conn.execute(statements.query("bench_meaning_index"))
        conn.execute(statements.query("bench_meaning_analyze"))
    built = time.perf_counter() - began
    with db.connection() as conn:
        size = conn.execute(statements.query("bench_meaning_size")).fetchone()
        typical = [row["id"] for row in conn.execute(statements.query("bench_meaning_owners"),
                                                     {"prefix": "o", "count": samples})]
        heavy_id = conn.execute("SELECT id FROM owners WHERE name = 'heavy'").fetchone()["id"]
        share = conn.execute(statements.query("bench_meaning_share"), {"owner_id": heavy_id}).fetchone()
    questions = [question for question, *_ in QUESTIONS]
    rng = random.Random(7)
    rows = []
    kinds = [("meaning", None), ("both", None), ("meaning", "S1"), ("meaning", "S9")]
    for label, chosen, passages in (("typical", typical, per_owner), ("heavy", [heavy_id], heavy)):
        for mode, speaker in kinds:
            walls, cpus = [], []
            for i in range(samples):
                owner_id = chosen[i % len(chosen)]
                question = rng.choice(questions)
                with db.connection() as conn:
                    backends = [row["pid"] for row in conn.execute(statements.query("bench_meaning_backends"))]
                began_cpu, began_server = time.process_time(), server_cpu_ns(backends)
                began = time.perf_counter()
                search(store, owner_id, question, mode=mode, limit=20, speaker=speaker)
                walls.append(1000 * (time.perf_counter() - began))
                server = (server_cpu_ns(backends) - began_server) / 1e6
                cpus.append(1000 * (time.process_time() - began_cpu) + server)
            rows.append({"owner": label, "owner's passages": passages, "mode": mode,
                         "speaker": {None: "any", "S1": "S1 (a quarter)", "S9": "S9 (one in 1,000)"}[speaker],
                         "p50 ms": round(statistics.median(walls), 1), "p95 ms": round(percentile(walls, 0.95), 1),
                         "max ms": round(max(walls), 1), "CPU p50 ms": round(statistics.median(cpus), 1),
                         "CPU p95 ms": round(percentile(cpus, 0.95), 1)})
    figures = {
        "passages": size["passages"],
        "fill s": round(filled, 1),
        "HNSW build s": round(built, 1),
        "bytes per passage (table, TOAST, keys, HNSW)": round(size["total_bytes"] / size["passages"]),
        "HNSW bytes per passage": round(size["hnsw_bytes"] / size["passages"]),
        "heavy owner's partition": share["partition"],
        "heavy owner's share of its partition %": round(
            100 * share["passages"] / max(1, share["partition_passages"]), 1),
    }
    return rows, figures


def server_cpu_ns(pids: list[int]) -> int:
    """The CPU time the database's processes `pids` have run, in ns (the scheduler's own
    account, /proc/PID/schedstat: finer than the clock ticks of /proc/PID/stat); the server is on
    this machine."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def show(title: str, rows: list[dict]) -> None:
    headers = list(rows[0])
    print(f"\n{title}\n" + table(headers, [[row[h] for h in headers] for row in rows]), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.meaning", description=__doc__.splitlines()[0])
    parser.add_argument("--owners", type=int, default=1000)
    parser.add_argument("--per-owner", type=int, default=1000)
    parser.add_argument("--heavy", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--write-as", default="meaning", help="bench/results/NAME.json (default meaning)")
    args = parser.parse_args(argv)
    logs.configure(level="WARNING")
    results: dict = {}
    with scratch_database() as url, Database(url, max_size=4) as db:
        db.migrate()
        store = Store(db)
        if not store.meaning_ready():
            sys.exit("bench.meaning needs a server with pgvector (the embedded one has it)")
        results["quality"] = quality(store)
        show(f"Recall@5 ({len(QUESTIONS)} questions)", results["quality"])
        results["cost"] = cost()
        show("cost", [results["cost"]])
        if not args.skip_speed:
            rows, figures = speed(store, args.owners, args.per_owner, args.heavy, args.samples)
            per_passage = figures["bytes per passage (table, TOAST, keys, HNSW)"]
            hour_bytes = per_passage * results["cost"]["passages per audio hour"]
            figures["storage per audio hour, MB"] = round(hour_bytes / 1e6, 2)
            results["speed"], results["archive"] = rows, figures
            show("speed (mode=meaning, mode=both: the service's search, wall)", rows)
            show("archive", [figures])
    headers = list(results["quality"][0])
    report(args.write_as, headers, [[row[h] for h in headers] for row in results["quality"]], extra=results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
