"""Storage that follows the record's life: audio written in committed chunks and
usable once complete, converted audio let go by the save that reaches done, windows written
once, and the orphan sweep in bounded batches over indexes. Real PostgreSQL, real audio decoded
by PyAV, real worker processes killed where the rule is about a worker dying."""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

import psycopg
import pytest
from psycopg import sql

from actors.work import Outcome, run_once
from conftest import ROOT, add_record, checkpoint, kinds, policy, save_result, settings, work_until_idle
from db.blobs import CHUNK_BYTES
from db.check import Facts
from db.queries import query
from domain.claims import Claim, ClaimLost
from domain.invariants import check
from domain.stages import Step
from media import encode

WORKER = """
import os, signal, sys
sys.path.insert(0, {root!r})
import actors.steps, db.pipeline
from actors.work import run_once
from domain.stages import Step
from service import config
from service.runtime import open_store
{hook}
settings = config.load()
store = open_store(settings)
print(run_once(store, settings, Step.{step}), flush=True)
"""

# The conversion's decoder kills its whole worker (SIGKILL) once more than two chunks' worth of
# PCM went by: two chunks are committed, the third is being gathered.
KILL_MID_CONVERSION = """
decode = actors.steps.pcm16k
def pcm16k(*args, **kwargs):
    given = 0
    for piece in decode(*args, **kwargs):
        yield piece
        given += len(piece)
        if given > 2.5 * (1 << 20):
            os.killpg(0, signal.SIGKILL)
actors.steps.pcm16k = pcm16k
"""

# The worker dies right after the save that reaches done committed, before it deletes the audio
# that save let go.
KILL_AFTER_DONE = """
def discard_blob(*args, **kwargs):
    os.killpg(0, signal.SIGKILL)
db.pipeline.discard_blob = discard_blob
"""


def worker(env, step: str, hook: str, **more_env) -> subprocess.CompletedProcess:
    script = WORKER.format(root=str(ROOT), hook=hook, step=step)
    return subprocess.run([sys.executable, "-c", script], env={**env, **more_env}, start_new_session=True,
                          capture_output=True, timeout=600)


def blobs(db) -> list[dict]:
    with db.connection() as conn:
        return conn.execute("SELECT b.id, b.completed_at, b.writer_record_id, b.size_bytes, "
                            "(SELECT count(*) FROM blob_chunks c WHERE c.blob_id = b.id) AS chunks "
                            "FROM blobs b ORDER BY b.id").fetchall()


def accept(store, owner, path):
    return store.accept(owner["id"], [path.read_bytes()], source_name=path.name)


def test_done_lets_the_converted_audio_go_and_keeps_the_original(store, owner, db, tmp_path):
    """The save that reaches done clears the record's converted audio in the same
    statement that saves the text, and the PCM is deleted right after; the original stays, byte
    for byte, and the text is served."""
    path = encode(tmp_path / "speech.flac", "flac")
    record_id = accept(store, owner, path)
    s = settings(engine="pocketsphinx")
    assert run_once(store, s, Step.CONVERT) == Outcome.SAVED
    converted = store.read_record(record_id)["converted_blob_id"]
    assert converted is not None and b"".join(store.read_blob(converted))
    assert run_once(store, s, Step.RECOGNIZE) == Outcome.SAVED
    row = store.read_record(record_id)
    assert (row["stage"], row["converted_blob_id"]) == ("done", None)
    assert [b["id"] for b in blobs(db)] == [row["original_blob_id"]]  # the PCM and its chunks are gone
    assert b"".join(store.read_blob(row["original_blob_id"])) == path.read_bytes()
    assert row["transcript"] and store.transcript(record_id)["segments"]
    assert check(Facts(db), grace_seconds=0).sound


def test_a_crash_between_done_and_the_deletion_leaves_the_audio_to_the_sweep(store, owner, db, tmp_path, env):
    """A worker killed (SIGKILL) right after the save that reaches done, before it
    deleted the converted audio: the record is done with its text and points at no PCM; the PCM
    is an orphan that the sweep removes once its grace is over, and not before."""
    record_id = accept(store, owner, encode(tmp_path / "speech.flac", "flac"))
    assert run_once(store, settings(engine="pocketsphinx"), Step.CONVERT) == Outcome.SAVED
    converted = store.read_record(record_id)["converted_blob_id"]
    died = worker(env, "RECOGNIZE", KILL_AFTER_DONE, TRANSCRIBER_ENGINE="pocketsphinx")
    assert died.returncode == -9, died.stderr.decode()[-2000:]
    row = store.read_record(record_id)
    assert (row["stage"], row["converted_blob_id"]) == ("done", None) and row["transcript"]
    assert converted in [b["id"] for b in blobs(db)]  # let go, not yet deleted
    assert check(Facts(db)).sound  # within the sweep's grace: not a violation yet
    assert [v.blob for v in check(Facts(db), grace_seconds=0).violations] == [converted]
    assert store.sweep_orphan_blobs(3600).removed == 0
    assert store.sweep_orphan_blobs(0).removed == 1
    assert [b["id"] for b in blobs(db)] == [row["original_blob_id"]]
    assert check(Facts(db), grace_seconds=0).sound


def test_a_conversion_commits_its_chunks_and_a_dead_conversions_leftovers_are_swept(store, owner, db, tmp_path, env):
    """Conversion writes its PCM in committed chunks (seen from outside while the
    conversion is under way: no transaction lasts the whole decode), a blob is usable only once
    complete, and the incomplete blob of a conversion whose worker was killed is left alone while
    its claim is still the record's, then swept once the record was claimed again. The next
    worker converts the record from the start."""
    record_id = accept(store, owner, encode(tmp_path / "long.flac", "flac", repeat=10))  # ~98 s: 3 MB of PCM
    died = worker(env, "CONVERT", KILL_MID_CONVERSION, TRANSCRIBER_CONVERT_LEASE_SECONDS="2")
    assert died.returncode == -9, died.stderr.decode()[-2000:]
    original = store.read_record(record_id)["original_blob_id"]
    [partial] = [b for b in blobs(db) if b["id"] != original]
    assert (partial["completed_at"], partial["writer_record_id"], partial["chunks"]) == (None, record_id, 2)
    assert list(store.read_blob(partial["id"])) == []  # not usable: never completed
    assert store.read_record(record_id)["stage"] == "created"
    assert store.sweep_orphan_blobs(0).removed == 0  # its claim is still the record's
    assert check(Facts(db), grace_seconds=0).sound
    deadline = time.monotonic() + 60
    while store.read_record(record_id)["lease_expires_at"] > store.db.one("SELECT now() AS now")["now"]:
        assert time.monotonic() < deadline, "the dead worker's lease never ran out"
        time.sleep(0.2)
    assert run_once(store, settings(), Step.CONVERT) == Outcome.SAVED
    assert store.sweep_orphan_blobs(0).removed == 1  # the dead conversion's chunks
    row = store.read_record(record_id)
    assert {b["id"] for b in blobs(db)} == {original, row["converted_blob_id"]}
    pcm = b"".join(store.read_blob(row["converted_blob_id"]))
    assert len(pcm) == round(row["duration_seconds"] * 32000) > 2 * CHUNK_BYTES
    assert check(Facts(db), grace_seconds=0).sound


def test_a_stale_converter_is_refused_at_its_next_chunk(store, owner, db):
    """P3: a conversion's chunks are holder writes: once its lease ran out and the
    record was claimed again, its next chunk is refused (ClaimLost, `save_refused` in the
    journal), its partial audio is taken away, and the new holder's claim is untouched."""
    record_id = add_record(store, owner)
    stale = store.claim(Step.CONVERT, policy(lease=0.2))
    taken: list[Claim] = []

    def pieces():
        yield bytes(CHUNK_BYTES)
        time.sleep(0.3)
        taken.append(store.claim(Step.CONVERT, policy()))
        yield bytes(CHUNK_BYTES)
        yield bytes(CHUNK_BYTES)

    with pytest.raises(ClaimLost):
        store.store_blob(pieces(), "audio/L16", writer=stale)
    [current] = taken
    assert current.record_id == record_id
    assert [b["id"] for b in blobs(db)] == [store.read_record(record_id)["original_blob_id"]]
    refusals = [e["detail"] for e in store.events(record_id) if e["kind"] == "save_refused"]
    assert refusals == [{"step": "convert", "write": "audio_chunk", "claim_token": stale.token, "current_claim_token": current.token}]
    assert store.read_record(record_id)["claim_token"] == current.token


def test_intake_writes_committed_chunks_and_a_broken_upload_leaves_nothing(store, owner, db):
    """An upload is stored in chunks like any blob and marked complete with its
    record; one that fails midway stores nothing (no record, no partial audio)."""
    payload = bytes(range(256)) * (CHUNK_BYTES // 256 * 2 + 100)  # two chunks and a bit
    record_id = store.accept(owner["id"], [payload])
    [blob] = blobs(db)
    assert (blob["chunks"], blob["size_bytes"]) == (3, len(payload)) and blob["completed_at"] is not None
    assert b"".join(store.read_blob(store.read_record(record_id)["original_blob_id"])) == payload

    def broken():
        yield payload
        raise OSError("the upload broke off")

    with pytest.raises(OSError):
        store.accept(owner["id"], broken())
    assert [b["id"] for b in blobs(db)] == [blob["id"]]
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM records").fetchone()["n"] == 1


def test_the_sweep_goes_by_bounded_batches_of_blob_ids(store, owner, db):
    """The sweep takes keyset batches of blob ids and stops at a batch boundary
    once its time is up, saying where to go on; going on from there removes exactly the orphans:
    complete ones past their grace and incomplete ones nobody writes, never audio a record points
    at, nor an upload still within its grace."""
    record_id = add_record(store, owner)
    orphans = [store.store_blob([b"pcm"], "audio/L16")[0] for _ in range(25)]
    with db.connection() as conn:
        conn.execute("UPDATE blobs SET created_at = now() - interval '2 hours', completed_at = now() - interval "
                     "'2 hours' WHERE id = ANY(%s)", [orphans])
        stalled = conn.execute("INSERT INTO blobs (media_type, created_at) VALUES ('x', now() - interval '2 hours') "
                               "RETURNING id").fetchone()["id"]   # an intake that never finished
        fresh = conn.execute("INSERT INTO blobs (media_type) VALUES ('x') RETURNING id").fetchone()["id"]
    removed, after, runs = 0, 0, 0
    while True:
        swept = store.sweep_orphan_blobs(3600, budget_seconds=0, after_id=after, batch=10)
        removed, after, runs = removed + swept.removed, swept.resume_after, runs + 1
        if not after:
            break
    assert (removed, runs) == (26, 3)
    left = [b["id"] for b in blobs(db)]
    assert left == sorted([store.read_record(record_id)["original_blob_id"], fresh]) and stalled not in left


def _plan_nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from _plan_nodes(child)


def explain(db, name: str, params: dict) -> list[dict]:
    with db.connection() as conn:
        document = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + query(name), params).fetchone()
    return list(_plan_nodes(document["QUERY PLAN"][0]["Plan"]))


def test_the_sweep_and_blob_deletes_probe_indexes_instead_of_scanning_records(store, owner, db):
    """With an archive's worth of rows (5,000 records, 10,000 blobs, statistics
    gathered), the sweep's batch and the guarded chunk delete find the records pointing at a blob
    through the indexes of the blob references: no sequential scan of records."""
    with db.connection() as conn:
        conn.execute("""
            WITH b AS (INSERT INTO blobs (media_type, completed_at) SELECT 'x', now() FROM generate_series(1, 10000)
                       RETURNING id)
            INSERT INTO records (owner_id, original_blob_id, converted_blob_id, stage)
            SELECT %(owner)s, o.id, c.id, 'converted'
            FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM b) o
            JOIN (SELECT id, row_number() OVER (ORDER BY id) AS n FROM b) c ON c.n = o.n + 5000
            WHERE o.n <= 5000""", {"owner": owner["id"]})
        conn.execute("ANALYZE records")
        conn.execute("ANALYZE blobs")
    for name, params in [("orphan_blobs", {"after_id": 0, "batch": 1000, "grace_seconds": 3600}),
                         ("delete_blob_chunks", {"blob_id": 42, "complete": True, "batch": 32}),
                         ("delete_blob", {"blob_id": 42, "complete": True})]:
        nodes = explain(db, name, params)
        scans = {(n["Node Type"], n.get("Relation Name"), n.get("Index Name")) for n in nodes if "Relation Name" in n}
        assert not [s for s in scans if s[0] == "Seq Scan" and s[1] == "records"], (name, scans)
        used = {s[2] for s in scans if s[1] == "records"}
        assert used >= {"records_original_blob", "records_converted_blob"}, (name, scans)
    assert ("Index Scan", "blobs", "blobs_pkey") in {
        (n["Node Type"], n.get("Relation Name"), n.get("Index Name")) for n in explain(
            db, "orphan_blobs", {"after_id": 0, "batch": 1000, "grace_seconds": 3600})}


def test_the_sweep_actor_is_bounded_and_goes_on_where_it_stopped(store, db, monkeypatch):
    """Dramatiq's own time limit (10 minutes by default) never cuts the sweep short:
    the actor has a limit of its own above its run's budget, and a run whose budget is spent
    sends itself on from the blob where it stopped."""
    import actors
    from db import blobs as blob_storage

    assert actors.sweep.options["time_limit"] >= (actors.SWEEP_RUN_SECONDS + 60) * 1000
    actors.use(settings(), store)
    with db.connection() as conn:
        conn.execute("INSERT INTO blobs (media_type, created_at, completed_at) "
                     "SELECT 'x', now() - interval '2 hours', now() - interval '2 hours' FROM generate_series(1, 15)")
    sent = []
    monkeypatch.setattr(blob_storage, "SWEEP_BATCH", 10)
    monkeypatch.setattr(actors, "SWEEP_RUN_SECONDS", 0)
    monkeypatch.setattr(actors.sweep, "send", lambda *args: sent.append(args))
    actors.sweep.fn()
    assert len(sent) == 1 and len(blobs(db)) == 5
    actors.sweep.fn(*sent[0])
    assert len(sent) == 1 and blobs(db) == []


def _no_fpi_wal(conn, start: str, end: str) -> int:
    """WAL this database wrote between two positions, full-page images left out (how often the
    server checkpoints decides those): the records whose blocks are in this database, and the
    commit records of the transactions that wrote them."""
    return conn.execute("""
        WITH w AS (SELECT * FROM pg_get_wal_records_info(%(s)s::pg_lsn, %(e)s::pg_lsn)),
        mine AS (SELECT * FROM w WHERE block_ref LIKE '%%/' || (SELECT oid FROM pg_database
                                                                WHERE datname = current_database()) || '/%%'),
        tx AS (SELECT * FROM w WHERE resource_manager = 'Transaction'
                                 AND xid IN (SELECT xid FROM mine WHERE xid <> '0'))
        SELECT (SELECT coalesce(sum(record_length - fpi_length), 0) FROM mine)
             + (SELECT coalesce(sum(record_length), 0) FROM tx) AS bytes""", {"s": start, "e": end}).fetchone()["bytes"]


def test_each_checkpoint_writes_its_window_once_whatever_came_before(store, owner, db):
    """A checkpoint appends its window; it never rewrites the windows before it, so
    the WAL it writes stays flat as the recording grows (the last of 30 windows costs what the
    first did; rewriting the segment list made it grow with the length). WAL is read per statement
    with pg_walinspect and kept to this database: the server is shared."""
    with db.connection() as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        except Exception as error:  # a server built without contrib
            pytest.skip(f"pg_walinspect is not available: {error}")
    record_id = add_record(store, owner)
    assert save_result(store, store.claim(Step.CONVERT, policy()), {"duration_seconds": 900.0})
    claim = store.claim(Step.RECOGNIZE, policy())
    words = [{"word": f" word{i}", "start": i * 0.4, "end": i * 0.4 + 0.3} for i in range(60)]
    segment = {"text": " ".join(w["word"] for w in words), "words": words}
    costs = []
    with db.connection() as conn:
        for n in range(30):
            segments = [{**segment, "start": n * 30 + k * 5, "end": n * 30 + k * 5 + 4} for k in range(6)]
            start = conn.execute("SELECT pg_current_wal_flush_lsn()::text AS at").fetchone()["at"]
            assert checkpoint(store, claim, n * 30.0, n * 30.0 + 30, segments, "en", 60)
            end = conn.execute("SELECT pg_current_wal_flush_lsn()::text AS at").fetchone()["at"]
            try:
                costs.append(_no_fpi_wal(conn, start, end))
            except (psycopg.errors.UndefinedFile, psycopg.errors.InvalidParameterValue):
                costs.append(None)  # a checkpoint recycled that WAL already: the next ones tell
    first, last = [statistics.median([c for c in part if c is not None]) for part in (costs[:8], costs[-8:])]
    assert last < 1.5 * first, costs
    assert kinds(store, record_id).count("checkpoint") == 30
