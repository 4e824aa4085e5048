"""The owner's corrections at scale: an edit's latency on a record of 10,000 segments, and what
reading the corrected text costs against reading the recognised one. Prints a table.

    TRANSCRIBER_DATABASE_URL=postgresql://… .venv/bin/python -m bench.corrections [--segments 10000]

The record is made done by the service's own writes in a scratch database: a claim, one
`Store.checkpoint` per 30 s window holding segments shaped as the engines give them (14-26 timed
words each, bench.storage's `window_segments`), then the save that reaches done. Edits go
through `Store.correct_segments` (what `PATCH /records/{id}/text` and `transcriber edit` call):
each replaces one word of a random segment, so the words around it keep their times. Reads go
through `Store.transcript` (the one read every reader of the text goes through) and the txt
renderer (the subtitle renderers do the same work on either version's segments), for
version=recognised and the default corrected version, alternated so that both see the same
cache; once before any correction and once with `--edits` corrections.
"""
from __future__ import annotations

import argparse
import random
import time

from audio.formats import render_record
from bench.common import percentile, report
from bench.scratch import scratch_database
from bench.storage import save_window, vocabulary, window_segments
from db import Database, Store
from domain.corrections import CORRECTED, RECOGNISED
from domain.policy import StepPolicy
from domain.stages import Step
from service import logs

POLICY = StepPolicy(lease_seconds=600, time_limit_seconds=86400, max_attempts=3, backoff_seconds=10)
WINDOW_SECONDS = 30.0


def done_record(store: Store, owner_id: int, segments: int, rng: random.Random) -> int:
    """A done record of at least `segments` segments, saved as recognition saves one."""
    record_id = store.accept(owner_id, [b"not really audio"], source_name="long.bin")
    words = vocabulary(rng)
    windows, at, made = [], 0.0, 0
    while made < segments:
        part = window_segments(rng, words, at, WINDOW_SECONDS)
        windows.append((at, part[-1]["end"], part))
        at, made = part[-1]["end"], made + len(part)
    claim = store.claim(Step.CONVERT, POLICY)
    assert claim is not None and store.save(claim, {"duration_seconds": at}, next_step=Step.RECOGNIZE)
    claim = store.claim(Step.RECOGNIZE, POLICY)
    assert claim is not None
    for start, end, part in windows:
        assert save_window(store, claim, start, end, part, POLICY.lease_seconds)
    assert store.save(claim, {"engine": "bench"}, next_step=None)
    return record_id


def timed_reads(store: Store, record_id: int, repeats: int) -> dict[str, list[float]]:
    """Milliseconds of reading the text (the row, and the row rendered as txt) in each version,
    alternated."""
    times: dict[str, list[float]] = {f"{kind} {version}": [] for kind in ("read", "txt")
                                     for version in (RECOGNISED, CORRECTED)}
    for _ in range(repeats):
        for version in (RECOGNISED, CORRECTED):
            began = time.perf_counter()
            row = store.transcript(record_id, version=version)
            read = time.perf_counter()
            render_record("txt", row)
            txt = time.perf_counter()
            times[f"read {version}"].append(1000 * (read - began))
            times[f"txt {version}"].append(1000 * (txt - began))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=10_000)
    parser.add_argument("--edits", type=int, default=300)
    parser.add_argument("--reads", type=int, default=21)
    parser.add_argument("--smoke", action="store_true", help="a small run that writes no result file")
    args = parser.parse_args()
    logs.configure(level="WARNING")
    rng = random.Random(38)
    with scratch_database() as url, Database(url, max_size=2) as db:
        db.migrate()
        store = Store(db)
        store.add_owner("owner")
        owner_id = store.owner_by_name("owner")["id"]
        record_id = done_record(store, owner_id, args.segments, rng)
        recognised = store.transcript(record_id, version=RECOGNISED)
        segments = recognised["segments"]
        before = timed_reads(store, record_id, args.reads)

        edits = []
        for _ in range(args.edits):
            index = rng.randrange(len(segments))
            said = segments[index]["text"].split()
            said[rng.randrange(len(said))] = "Aligner"
            began = time.perf_counter()
            assert store.correct_segments(record_id, owner_id, [(index, " ".join(said))], by="bench")
            edits.append(1000 * (time.perf_counter() - began))
        corrections = store.card_row(record_id)["corrections"]
        after = timed_reads(store, record_id, args.reads)

    rows = [["edit one segment", corrections, round(percentile(edits, 0.5), 2), round(percentile(edits, 0.95), 2),
             None]]
    for label, times in (("no correction", before), (f"{corrections} corrections", after)):
        for kind in ("read", "txt"):
            plain, fixed = times[f"{kind} {RECOGNISED}"], times[f"{kind} {CORRECTED}"]
            rows.append([f"{kind}, {label}: recognised", len(segments), round(percentile(plain, 0.5), 1),
                         round(percentile(plain, 0.95), 1), None])
            rows.append([f"{kind}, {label}: corrected", len(segments), round(percentile(fixed, 0.5), 1),
                         round(percentile(fixed, 0.95), 1),
                         round(percentile(fixed, 0.5) / percentile(plain, 0.5), 3)])
    report("corrections", ["what", "segments / corrections", "p50 ms", "p95 ms", "corrected / recognised (p50)"],
           rows, {"segments": len(segments), "edits": args.edits}, write=not args.smoke)


if __name__ == "__main__":
    main()
