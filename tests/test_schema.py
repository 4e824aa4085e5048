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
    assert migrations()[0][:2] == (1, "baseline")  # the schema as one piece; later changes follow it


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
