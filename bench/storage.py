"""Storage of a long recording through the pipeline: WAL written per audio hour
while it is recognised, the longest transaction on the way, and the bytes kept once it is done.
Prints a table.

    TRANSCRIBER_DATABASE_URL=postgresql://… .venv/bin/python -m bench.storage [--hours 2]

The recording is built with PyAV (bench.memory's `build`: the bundled speech sample with
pauses of 0.5-3 s, Ogg Opus at 32 kbit/s), accepted and converted by the service's own code
(`Store.accept`, the convert step through `run_once`) in a scratch database. Recognition is the
service's own writes with synthetic segments: a claim, one `Store.checkpoint` per window at the
windows the service cuts (`audio.windows` over the stored PCM), each window's segments shaped as
the engines give them (about 120 words with word times per 30 s, 6-8 kB of JSON), then the save
that reaches done (`Store.save`: the text assembled from the windows, the converted audio let go
and deleted in batches). No recognizer runs: the figures are the database's.

WAL is read per transaction with pg_walinspect right after it commits, keeping only the records
of this database and the commit records of their transactions: the server may be shared, and
checkpoints recycle WAL segments (cluster-wide LSN differences count everybody's writes). A
full-page image is written for a page's first change after each checkpoint, so how often the
server checkpoints decides the FPI share: the "no FPI" column is the figure to compare; the
server's checkpoint_timeout and max_wal_size are printed with it.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

import psycopg
from psycopg.rows import dict_row

from actors.work import Outcome, run_once
from audio.decode import BYTES_PER_SECOND
from audio.windows import end_of, windows
from bench.common import report
from bench.memory import build
from bench.scratch import scratch_database
from db import Database, Store
from domain.claims import Claim
from domain.stages import Step
from service import config, logs

WAL_OF = """
WITH w AS (SELECT * FROM pg_get_wal_records_info(%(s)s::pg_lsn, %(e)s::pg_lsn)),
mine AS (SELECT * FROM w WHERE block_ref LIKE '%%/' || (SELECT oid FROM pg_database
                                                        WHERE datname = current_database()) || '/%%'),
tx AS (SELECT * FROM w WHERE resource_manager = 'Transaction' AND xid IN (SELECT xid FROM mine WHERE xid <> '0'))
SELECT (SELECT coalesce(sum(record_length), 0) FROM mine) + (SELECT coalesce(sum(record_length), 0) FROM tx) AS total,
       (SELECT coalesce(sum(fpi_length), 0) FROM mine) AS fpi"""


class MeteredDatabase(Database):
    """The service's pool, with every transaction timed and its WAL read as soon as it ends,
    under the label of the phase under way."""

    def __init__(self, url: str):
        super().__init__(url, max_size=4)
        self.meter = psycopg.connect(url, autocommit=True, row_factory=dict_row)
        # one transaction measured at a time (a lease renewal waits for a chunk's commit): WAL
        # ranges of transactions running side by side would each count the other's
        self.lock = threading.RLock()
        self.phase = "setup"
        self.seen: list[dict] = []
        self.unread = 0

    def _lsn(self) -> str:
        return self.meter.execute("SELECT pg_current_wal_flush_lsn()::text AS at").fetchone()["at"]

    @contextlib.contextmanager
    def _metered(self, opened):
        with self.lock:
            start, began = self._lsn(), time.perf_counter()
            with opened as conn:
                yield conn
            seconds, end = time.perf_counter() - began, self._lsn()
            self._read(start, end, seconds)

    def _read(self, start: str, end: str, seconds: float) -> None:
        try:
            wal = self.meter.execute(WAL_OF, {"s": start, "e": end}).fetchone()
        except (psycopg.errors.UndefinedFile, psycopg.errors.InvalidParameterValue):
            wal, self.unread = None, self.unread + 1  # recycled already: counted as unread
        self.seen.append({"phase": self.phase, "seconds": seconds, "wal": wal and wal["total"],
                          "fpi": wal and wal["fpi"]})

    def connection(self):
        return self._metered(super().connection())

    def transaction(self):
        return self._metered(super().transaction())

    def one(self, *args, **kwargs):
        """A statement on its own (the claim, a checkpoint, the save): metered the same way."""
        with self._metered(contextlib.nullcontext()):
            return super().one(*args, **kwargs)

    def close(self) -> None:
        self.meter.close()
        super().close()


def window_segments(rng: random.Random, vocabulary: list[str], start: float, seconds: float) -> list[dict]:
    """A window's segments as the engines give them, timed from the recording's start: about four
    words a second, 14-26 words a segment, each word with its times."""
    segments, at, left = [], start, max(1, round(seconds * 4))
    while left > 0:
        count = min(left, rng.randint(14, 26))
        left -= count
        words, begin = [], at
        for _ in range(count):
            length = rng.uniform(0.12, 0.2)
            words.append({"word": " " + rng.choice(vocabulary), "start": round(at, 3), "end": round(at + length, 3),
                          "probability": round(rng.uniform(0.5, 1.0), 3)})
            at += length + rng.uniform(0.0, 0.05)
        segments.append({"start": round(begin, 3), "end": round(at, 3),
                         "text": "".join(w["word"] for w in words) + ".", "words": words})
    return segments


def save_window(store: Store, claim: Claim, start: float, end: float, segments: list[dict], lease: float) -> bool:
    """A recognised window (English) saved as the recognize step saves it: its checkpoint."""
    kept = {"segments": segments, "language": "en", "language_probability": None, "suppressed": [], "english": None}
    return store.checkpoint(claim, start, end, lease, kept, {"segments": len(segments)})


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["the", "and", "of", "to", "in"]
    return ["".join(rng.choice(syllables) for _ in range(rng.choice((1, 1, 2, 2, 2, 3)))) for _ in range(size)]


def stored_bytes(db: MeteredDatabase, record_id: int) -> dict:
    with db.meter.transaction():
        m = db.meter
        row = m.execute("""
            SELECT (SELECT coalesce(sum(length(c.data)), 0) FROM blob_chunks c WHERE c.blob_id = r.original_blob_id) AS original,
                   (SELECT coalesce(sum(pg_column_size(c.data)), 0) FROM blob_chunks c WHERE c.blob_id = r.original_blob_id)
                       AS original_stored,
                   (SELECT count(*) FROM blobs) AS blobs,
                   r.converted_blob_id,
                   pg_column_size(r.transcript) AS transcript_stored, octet_length(r.transcript) AS transcript,
                   (SELECT coalesce(sum(pg_column_size(w.segments)), 0) FROM record_windows w WHERE w.record_id = r.id)
                       AS windows_stored,
                   (SELECT coalesce(sum(octet_length(w.segments::text)), 0) FROM record_windows w WHERE w.record_id = r.id)
                       AS windows_json
            FROM records r WHERE r.id = %s""", [record_id]).fetchone()
    m.execute("VACUUM FULL blob_chunks")
    m.execute("VACUUM FULL record_windows")
    m.execute("VACUUM FULL records")
    sizes = m.execute("""SELECT relname, pg_total_relation_size(oid) AS bytes FROM pg_class
                         WHERE relname IN ('blob_chunks', 'blobs', 'records', 'record_windows', 'events')""").fetchall()
    return {**row, "relations": {s["relname"]: s["bytes"] for s in sizes}}


NO_WALINSPECT = ("bench/storage.py reads the WAL with pg_walinspect, which this PostgreSQL server does not "
                 "have (the embedded one lacks it): point TRANSCRIBER_DATABASE_URL at a server of 15 or later "
                 "with its contrib modules")


def has_walinspect(conn) -> bool:
    return conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_walinspect'").fetchone() is not None


def run(hours: float, folder: Path) -> dict:
    recording = folder / "long.ogg"
    seconds = build(recording, hours * 60, "sample")
    audio_hours = seconds / 3600
    with scratch_database() as url:
        with psycopg.connect(url, autocommit=True) as conn:
            if not has_walinspect(conn):
                raise SystemExit(NO_WALINSPECT)
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
            server = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in ("checkpoint_timeout", "max_wal_size")}
        db = MeteredDatabase(url)
        try:
            db.migrate()
            store = Store(db)
            store.add_owner("bench")
            owner = store.owner_by_name("bench")
            settings = config.load({"TRANSCRIBER_DATABASE_URL": url, "TRANSCRIBER_MAX_AUDIO_SECONDS": str(seconds + 60)})
            db.phase = "intake"
            record_id = store.accept(owner["id"], [recording.read_bytes()], source_name="long.ogg")
            db.phase = "convert"
            started = time.monotonic()
            assert run_once(store, settings, Step.CONVERT) == Outcome.SAVED
            convert_seconds = time.monotonic() - started
            row = store.read_record(record_id)
            db.phase = "setup"
            cuts = [(at, end_of(at, window)) for at, window in windows(store.read_blob(row["converted_blob_id"]))]
            claim = store.claim(Step.RECOGNIZE, settings.policy(Step.RECOGNIZE))
            rng = random.Random(16)
            words = vocabulary(rng)
            written = []
            for at, end in cuts:
                segments = window_segments(rng, words, at, end - at)
                written.append(len(json.dumps(segments)))
                db.phase = "checkpoint"
                assert save_window(store, claim, at, end, segments, 300)
            db.phase = "done"
            assert store.save(claim, {"engine": "synthetic"}, next_step=claim.step.next(speakers=False))
            db.phase = "after"
            kept = stored_bytes(db, record_id)
            seen, unread = db.seen, db.unread
        finally:
            db.close()
    return {"seconds": seconds, "audio_hours": audio_hours, "recording_bytes": recording.stat().st_size,
            "windows": len(cuts), "segment_bytes": written, "seen": seen, "unread": unread, "kept": kept,
            "server": server, "convert_seconds": convert_seconds, "pcm_bytes": round(seconds * BYTES_PER_SECOND)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--no-write", action="store_true", help="print only (a smoke run)")
    options = parser.parse_args()
    logs.configure(level="WARNING")
    with tempfile.TemporaryDirectory(prefix="transcriber-bench-") as folder:
        found = run(options.hours, Path(folder))
    hours, seen, MB = found["audio_hours"], found["seen"], 1e6

    def phase(name: str, part=None) -> list[dict]:
        rows = [s for s in seen if s["phase"] == name]
        return rows if part is None else part(rows)

    def wal(rows, key="wal") -> float:
        return sum(r[key] or 0 for r in rows)

    checkpoints = phase("checkpoint")
    half = len(checkpoints) // 2
    done = phase("done")
    save, dropped = done[:1], done[1:]  # the save's own statement, then the batches deleting the PCM
    segment_bytes = sum(found["segment_bytes"])
    recognising = checkpoints + save
    rows = []
    for label, every in [("intake (original, chunks + record)", phase("intake")),
                        ("conversion (PCM in chunks + save)", phase("convert")),
                        ("checkpoints, 1st half", checkpoints[:half]), ("checkpoints, 2nd half", checkpoints[half:]),
                        ("done save (text assembled, PCM let go)", save),
                        ("PCM deleted, batches", dropped), ("recognising = checkpoints + done save", recognising)]:
        part = [r for r in every if r["wal"] is not None]
        rows.append([label, len(part), len(every) - len(part), wal(part) / MB, (wal(part) - wal(part, "fpi")) / MB,
                     (wal(part) - wal(part, "fpi")) / MB / hours, max((r["seconds"] for r in every), default=0)])
    report("storage", ["transactions", "read", "unread", "WAL MB", "WAL no FPI MB", "no FPI MB per audio h",
                       "longest s"], rows,
           extra={"audio_seconds": found["seconds"], "server": found["server"], "unread_wal": found["unread"],
                  "segment_bytes": segment_bytes, "kept": found["kept"], "windows": found["windows"]},
           write=not options.no_write)
    # per checkpoint: its WAL without FPI against the segment bytes it wrote (one transaction each)
    assert len(checkpoints) == len(found["segment_bytes"])
    pairs = [(c["wal"] - c["fpi"], b) for c, b in zip(checkpoints, found["segment_bytes"]) if c["wal"] is not None]
    ratio = (sum(w for w, _ in pairs) + wal(save) - wal(save, "fpi")) / sum(b for _, b in pairs)
    per_window = [w for w, _ in pairs]
    growth = statistics.median(per_window[len(per_window) // 2:]) / statistics.median(per_window[:len(per_window) // 2])
    kept = found["kept"]
    text = kept["transcript_stored"] + kept["windows_stored"]
    print(f"\n{found['seconds'] / 3600:.2f} audio hours, {found['windows']} windows, "
          f"{segment_bytes / MB:.2f} MB of segments written ({segment_bytes / MB / hours:.2f} MB per audio hour)")
    print(f"recognising: WAL without FPI {ratio:.2f}x the segment bytes; a checkpoint's WAL, median of the 2nd half / "
          f"1st half {growth:.2f} "
          f"(server: checkpoint_timeout {found['server']['checkpoint_timeout']}, "
          f"max_wal_size {found['server']['max_wal_size']}; {found['unread']} transaction(s) unread)")
    print(f"longest transaction of the whole run: {max(s['seconds'] for s in seen):.3f} s; "
          f"conversion took {found['convert_seconds']:.0f} s for {found['pcm_bytes'] / MB:.0f} MB of PCM")
    print(f"after done: {kept['blobs']} blob(s), converted audio {'gone' if kept['converted_blob_id'] is None else 'KEPT'}; "
          f"original {kept['original_stored'] / MB / hours:.1f} MB + text {text / MB / hours:.2f} MB "
          f"(transcript {kept['transcript_stored'] / MB / hours:.2f}, windows {kept['windows_stored'] / MB / hours:.2f}) "
          f"per audio hour; relations after VACUUM FULL "
          f"{sum(kept['relations'].values()) / MB / hours:.1f} MB per audio hour {kept['relations']}")


if __name__ == "__main__":
    main()
