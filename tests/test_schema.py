"""Schema, migrations and the queue-column invariant (INV-2)."""
from __future__ import annotations

import psycopg
import pytest

from conftest import add_record, policy, save_result
from db import Database
from db.queries import migrations
from domain.stages import Step


def test_migrations_apply_twice(db):
    """Migrations are recorded; applying them again is a no-op."""
    assert db.migrate() == []
    assert db.migrate() == []
    with db.transaction() as conn:
        versions = [r["version"] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert versions == [version for version, _, _ in migrations()]


def test_adding_a_column_needs_no_change_to_the_claim(db, store, owner, tmp_path):
    """INV-2: a throwaway migration adds a column to records; the claim is untouched, the step
    reads the new column by an ordinary read, and a save keeps its value."""
    (tmp_path / "0900_add_mood.sql").write_text(
        "ALTER TABLE records ADD COLUMN mood text NOT NULL DEFAULT 'unknown';")
    assert db.migrate(tmp_path) == [900]
    record_id = add_record(store, owner)
    with db.transaction() as conn:
        conn.execute("UPDATE records SET mood = 'calm' WHERE id = %s", [record_id])
    claim = store.claim(Step.CONVERT, policy())
    assert store.read_record(claim.record_id)["mood"] == "calm"
    assert save_result(store, claim, {"duration_seconds": 2.0})
    assert store.read_record(record_id)["mood"] == "calm"


def test_every_record_has_an_owner(db):
    """P6: the owner is mandatory in the schema."""
    with pytest.raises(psycopg.errors.NotNullViolation):
        with db.transaction() as conn:
            blob = conn.execute("INSERT INTO blobs (media_type) VALUES ('x') RETURNING id").fetchone()["id"]
            conn.execute("INSERT INTO records (owner_id, original_blob_id) VALUES (NULL, %s)", [blob])


def test_journal_is_append_only(store, owner, db):
    """The event journal refuses updates and deletes."""
    record_id = add_record(store, owner)
    for statement in ("UPDATE events SET kind = 'x'", "DELETE FROM events"):
        with pytest.raises(psycopg.errors.RaiseException):
            with db.transaction() as conn:
                conn.execute(statement)
    assert [e["kind"] for e in store.events(record_id)] == ["accepted"]


def test_blobs_are_chunked_and_stream_back(store, owner):
    """Audio bytes live outside records, in chunks, and read back identically."""
    payload = bytes(range(256)) * 9000  # ~2.3 MB: three chunks
    blob_id, size = store.store_blob([payload[:1000], payload[1000:]], "audio/wav")
    assert size == len(payload)
    pieces = list(store.read_blob(blob_id, batch=2))
    assert len(pieces) == 3 and b"".join(pieces) == payload


def test_empty_upload_stores_nothing(store, owner, db):
    """Bad input loses nothing and stores nothing: an empty payload is refused."""
    with pytest.raises(ValueError):
        store.accept(owner["id"], [b""])
    with db.transaction() as conn:
        assert conn.execute("SELECT count(*) AS n FROM blobs").fetchone()["n"] == 0


def test_unreachable_database_fails_fast():
    """A database that is down does not hang start-up: the wait is bounded and stated clearly."""
    from db.database import DatabaseUnavailable
    import time

    started = time.monotonic()
    with pytest.raises(DatabaseUnavailable, match="unreachable"):
        Database("postgresql://postgres:secret@127.0.0.1:1/none")
    assert time.monotonic() - started < 30


def test_password_never_in_error():
    from domain.redact import redact_url as redact

    assert "secret" not in redact("postgresql://u:secret@h/db")


def test_orphaned_audio_is_swept(store, owner, db):
    """Audio no record points at (a worker died between storing and saving) is deleted after
    its grace period; audio that records use is kept."""
    record_id = add_record(store, owner)
    orphan, _ = store.store_blob([b"pcm" * 100], "audio/L16")
    assert store.sweep_orphan_blobs(3600).removed == 0  # still within its grace
    with db.transaction() as conn:
        conn.execute("UPDATE blobs SET created_at = now() - interval '2 hours', "
                     "completed_at = now() - interval '2 hours'")
    assert store.sweep_orphan_blobs(3600).removed == 1
    assert list(store.read_blob(orphan)) == []
    original = store.read_record(record_id)["original_blob_id"]
    assert b"".join(store.read_blob(original)) == b"not really audio"


def test_records_from_before_windows_keep_their_text_and_let_their_audio_go(database_url):
    """Storage that follows the record's life (migrations 10 and 11), on a database migrated from
    before them: a done record keeps its text and segments (now its one window) and lets its
    converted audio go (the sweep's after the grace); a record halfway through recognition goes on
    from its checkpoint; existing audio counts as complete; `transcriber check` finds it all
    sound."""
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict, make_conninfo
    from psycopg.types.json import Jsonb

    from db import Store
    from db.check import Facts
    from db.queries import query
    from domain.invariants import check

    info = conninfo_to_dict(database_url)
    name = f"{info['dbname']}_before_windows"
    admin = make_conninfo(**{**info, "dbname": "postgres"})
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    segments = [{"start": 0.5, "end": 2.0, "text": " Hello there.", "words": []},
                {"start": 2.5, "end": 4.0, "text": " Goodbye.", "words": []}]
    try:
        with Database(make_conninfo(**{**info, "dbname": name}), max_size=2) as legacy:
            with legacy.transaction() as conn:
                conn.execute(query("create_migrations_table"))
                for version, migration, text in migrations():
                    if version <= 7:
                        conn.execute(text)
                        conn.execute(query("record_migration"), {"version": version, "name": migration})
                owner = conn.execute("INSERT INTO owners (name, token_hash) VALUES ('old', 'x') RETURNING id").fetchone()["id"]
                blob = "INSERT INTO blobs (media_type, size_bytes) VALUES ('x', 3) RETURNING id"
                original, pcm, original2, pcm2 = (conn.execute(blob).fetchone()["id"] for _ in range(4))
                for blob_id in (original, pcm, original2, pcm2):
                    conn.execute("INSERT INTO blob_chunks (blob_id, seq, data) VALUES (%s, 0, 'abc')", [blob_id])
                done = conn.execute(
                    "INSERT INTO records (owner_id, stage, original_blob_id, converted_blob_id, duration_seconds, "
                    "recognized_seconds, transcript, segments, engine) VALUES (%s, 'done', %s, %s, 4.5, 4.5, "
                    "' Hello there.  Goodbye.', %s, 'e') RETURNING id", [owner, original, pcm, Jsonb(segments)]
                ).fetchone()["id"]
                halfway = conn.execute(
                    "INSERT INTO records (owner_id, stage, original_blob_id, converted_blob_id, duration_seconds, "
                    "recognized_seconds, segments) VALUES (%s, 'converted', %s, %s, 60, 29.5, %s) RETURNING id",
                    [owner, original2, pcm2, Jsonb(segments[:1])]).fetchone()["id"]
            assert legacy.migrate()  # 10 and 11, and whatever else came after 7
            store = Store(legacy)
            text = store.transcript(done)
            assert (text["transcript"], text["segments"]) == (" Hello there.  Goodbye.", segments)
            assert store.read_record(done)["converted_blob_id"] is None
            assert store.read_record(halfway)["converted_blob_id"] == pcm2
            with legacy.connection() as conn:
                windows = conn.execute("SELECT record_id, from_seconds, to_seconds FROM record_windows "
                                       "ORDER BY record_id").fetchall()
            assert [tuple(w.values()) for w in windows] == [(done, 0, 4.5), (halfway, 0, 29.5)]
            assert b"".join(store.read_blob(original)) == b"abc"  # complete, so readable
            assert check(Facts(legacy)).sound
            assert store.sweep_orphan_blobs(0).removed == 1  # the done record's converted audio
            assert check(Facts(legacy), grace_seconds=0).sound
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))



def test_a_read_after_a_column_is_renamed_carries_the_new_name(db, store, owner, tmp_path):
    """INV-2: the ordinary read names the columns the record has now, in a running process that
    read the old names just before (the decoded names are kept per result shape, so a renamed
    column is a new shape, never a stale name)."""
    added, renamed = tmp_path / "added", tmp_path / "renamed"
    added.mkdir()
    renamed.mkdir()
    (added / "0900_add_mood.sql").write_text("ALTER TABLE records ADD COLUMN mood text DEFAULT 'calm';")
    (renamed / "0901_rename_mood.sql").write_text("ALTER TABLE records RENAME COLUMN mood TO temper;")
    record_id = add_record(store, owner)
    assert db.migrate(added) == [900]
    for _ in range(8):  # past psycopg's threshold: the read is a prepared statement by now
        assert store.read_record(record_id)["mood"] == "calm"
    assert db.migrate(added, renamed) == [901]
    row = store.read_record(record_id)
    assert row["temper"] == "calm" and "mood" not in row
