"""One record per intended upload: what tells a repeated upload from a new one.

An upload that carries the owner's `Idempotency-Key` is the upload that key was first sent
with; without a key, an upload through the OpenAI-compatible address whose bytes the owner's
record in the pipeline already holds is that record (the official client retries by itself).
Either way only when it asks alike (`domain.asked`): the same bytes asked for with another
prompt, language or speakers are a new recognition, and the key sent with them is refused.
The decision is taken inside the transaction that would insert the record, under a lock on the
owner and the key (or the bytes), so two such requests at once make one record. The statements
are in `queries/uploads.sql`.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from db.database import Database
from db.queries import query
from db.rows import DictConnection
from domain.asked import Asked
from domain.errors import TranscriberError

# A key is kept at least this long; the sweep deletes it after.
KEY_KEEP_SECONDS = 24 * 3600
# A done record still takes a retry of its upload this long after it was done: a retry comes at
# most one client timeout (the official client's is 600 s) after the attempt before it.
RETRY_WINDOW_SECONDS = 900
SWEEP_KEYS_BATCH = 5000


class UploadKeyReused(TranscriberError, code="idempotency_key_reused"):
    """The owner's key was first sent with other bytes, or asking for something else; nothing
    was stored."""


@dataclass(frozen=True)
class SameUpload:
    """What makes an upload the same as an earlier one: the SHA-256 of its bytes, and the
    owner's key, or (without one) whether the same bytes in the pipeline count."""

    sha256: bytes
    key: str | None = None
    attach_in_flight: bool = False

    @property
    def decides(self) -> bool:
        return self.key is not None or self.attach_in_flight


def earlier_record(conn: DictConnection, owner_id: int, same: SameUpload, asked: Asked, *, lock: bool) -> int | None:
    """The record an earlier upload made that this one is, or None when it is a new one.
    Raises UploadKeyReused for the owner's key with other bytes or asked for otherwise. `lock`
    (inside a transaction) makes a second such upload wait for this one's transaction."""
    if not same.decides:
        return None
    if lock:
        conn.execute(query("lock_upload"), {"owner_id": owner_id, "what": same.key or same.sha256.hex()})
    compared = Jsonb(asked.value())
    if same.key is not None:
        row = conn.execute(
            query("upload_by_key"), {"owner_id": owner_id, "key": same.key, "asked": compared}
        ).fetchone()
        if row is None:
            return None
        if bytes(row["content_sha256"]) != same.sha256 or not row["asked_alike"]:
            raise UploadKeyReused(same.key)
        by_key: int = row["record_id"]
        return by_key
    row = conn.execute(
        query("upload_in_flight"),
        {
            "owner_id": owner_id,
            "content_sha256": same.sha256,
            "asked": compared,
            "window_seconds": RETRY_WINDOW_SECONDS,
        },
    ).fetchone()
    in_flight: int | None = None if row is None else row["id"]
    return in_flight


def keep_key(conn: DictConnection, owner_id: int, same: SameUpload, record_id: int) -> None:
    """Remember the owner's key for the record just made, in the same transaction."""
    if same.key is not None:
        conn.execute(
            query("keep_upload_key"),
            {"owner_id": owner_id, "key": same.key, "content_sha256": same.sha256, "record_id": record_id},
        )


class UploadKeys:
    """The keys' lookup ahead of storing and their sweep; a part of `db.store.Store`."""

    db: Database

    def earlier_upload(self, owner_id: int, same: SameUpload, asked: Asked) -> int | None:
        """The record this upload is (see `earlier_record`), looked up before anything is
        stored, so a repeat costs no second copy of its bytes; None when it looks new."""
        with self.db.connection() as conn:
            return earlier_record(conn, owner_id, same, asked, lock=False)

    def unfinished_uploads(self, owner_id: int, sha256: bytes, asked: Asked) -> list[DictRow]:
        """The owner's records of these bytes that an earlier run left unfinished, asked for
        alike, the oldest first: record_id, step, claim_token, claim_holder and whether a claim holds it
        (see the query `upload_unfinished`)."""
        with self.db.connection() as conn:
            return conn.execute(
                query("upload_unfinished"),
                {"owner_id": owner_id, "content_sha256": sha256, "asked": Jsonb(asked.value())},
            ).fetchall()

    def sweep_upload_keys(self, keep_seconds: float = KEY_KEEP_SECONDS, batch: int = SWEEP_KEYS_BATCH) -> int:
        """Delete the keys older than `keep_seconds`, in bounded batches; how many went."""
        removed = 0
        while True:
            with self.db.connection() as conn:
                deleted = conn.execute(
                    query("sweep_upload_keys"), {"keep_seconds": keep_seconds, "batch": batch}
                ).rowcount
            removed += deleted
            if deleted < batch:
                return removed
