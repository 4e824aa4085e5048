"""Resumable uploads (tus, `web.tus`) in the database: an upload is a row and an intake blob
filled in place, so any API process answers any of its requests and a crash loses no byte that
was acknowledged. The statements are in `queries/resumable.sql`.

Bytes go in pieces that never cross a chunk boundary (`piece_room`): each piece is one short
transaction that moves the upload's offset from where its writer found it and writes the piece
into its chunk (a new chunk, or the end of the last one, shorter when an earlier request stopped
inside it), so the committed offset and the committed bytes never disagree and two requests at
the same offset cannot both write. The blob keeps the chunks of every other blob (CHUNK_BYTES
each but the last), so a record made of it is read like any other.

Finishing is one transaction too (`finish_upload`, called by the one intake once it has checked
the bytes): the upload's row is locked, marked finished and its blob handed to the new record, so
two finishers at once, or one that repeats after a crash, make one record.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

from loguru import logger
from psycopg.rows import DictRow

from db.blobs import CHUNK_BYTES, chunks_of, discard_blob, finish_blob
from db.database import Database
from db.journal import record_log
from db.queries import query
from db.quotas import hold_quota
from db.records import NewRecord, insert_record
from db.rows import DictConnection
from db.uploads import SameUpload, UploadKeyReused
from domain.errors import TranscriberError

# random bytes of an upload's id: its address cannot be guessed
UPLOAD_ID_BYTES = 24
# uploads the sweep looks at per statement
SWEEP_UPLOADS_BATCH = 100


class UploadGone(TranscriberError, code="not_found"):
    """No such upload of the owner's (never made, another owner's, finished into a refusal,
    terminated or expired)."""


class OffsetMismatch(TranscriberError, code="offset_mismatch"):
    """The request's offset is not the upload's committed offset (another request wrote first,
    or the client lost track: it asks HEAD and goes on from there)."""


class PastLength(TranscriberError, code="past_upload_length"):
    """The bytes would go past the upload's declared length; none of them was written."""


@dataclass(frozen=True)
class NewUpload:
    """What a creation declares: its length (None: deferred), what the record will be called and
    what it asks of recognition (checked by the caller), and the owner's Idempotency-Key."""

    length: int | None
    source_name: str = ""
    title: str = ""
    language: str | None = None
    prompt: str | None = None
    speakers: str | None = None
    key: str | None = None

    def same_as(self, row: DictRow) -> bool:
        """Whether an earlier creation (its row) declared the same as this one."""
        return (row["upload_length"], row["source_name"], row["title"], row["language"], row["prompt"]) == (
            self.length,
            self.source_name,
            self.title,
            self.language,
            self.prompt,
        ) and row["speakers"] == self.speakers


def piece_room(offset: int) -> int:
    """How many bytes a piece written at `offset` may hold: up to the end of its chunk."""
    return CHUNK_BYTES - offset % CHUNK_BYTES


class ResumableUploads:
    """Resumable uploads; a part of `db.store.Store`."""

    db: Database

    def create_upload(self, owner_id: int, new: NewUpload, media_type: str) -> tuple[str, bool]:
        """A new upload of the owner's, or with the owner's key the one that key first made: its
        id and whether it is new. A key first sent declaring something else raises
        UploadKeyReused."""
        with self.db.transaction() as conn:
            if new.key is not None:
                conn.execute(query("lock_upload"), {"owner_id": owner_id, "what": "tus:" + new.key})
                row = conn.execute(
                    query("upload_by_idempotency_key"), {"owner_id": owner_id, "key": new.key}
                ).fetchone()
                if row is not None:
                    if not new.same_as(row):
                        raise UploadKeyReused(new.key)
                    earlier: str = row["id"]
                    return earlier, False
            upload_id = secrets.token_urlsafe(UPLOAD_ID_BYTES)
            conn.execute(
                query("insert_upload"),
                {
                    "id": upload_id,
                    "owner_id": owner_id,
                    "media_type": media_type,
                    "upload_length": new.length,
                    "source_name": new.source_name,
                    "title": new.title,
                    "language": new.language,
                    "prompt": new.prompt,
                    "speakers": new.speakers,
                    "key": new.key,
                },
            )
        logger.info("owner {} began resumable upload {}", owner_id, _short(upload_id))
        return upload_id, True

    def upload_state(self, upload_id: str, owner_id: int) -> DictRow | None:
        """The owner's upload as it stands, or None (missing, or another owner's)."""
        with self.db.connection() as conn:
            return conn.execute(query("upload_state"), {"id": upload_id, "owner_id": owner_id}).fetchone()

    def write_upload_piece(self, upload_id: str, owner_id: int, offset: int, data: bytes) -> int:
        """Commit `data` (at most `piece_room(offset)` bytes) at `offset` of the upload: the new
        offset. OffsetMismatch when the committed offset is not `offset`, PastLength past the
        declared length, UploadGone when it is finished or gone; nothing is written then."""
        if len(data) > piece_room(offset):
            raise ValueError("a piece may not cross a chunk boundary")
        if not data:
            return offset
        seq, within = divmod(offset, CHUNK_BYTES)
        with self.db.transaction() as conn:
            row = conn.execute(
                query("advance_upload"),
                {"id": upload_id, "owner_id": owner_id, "offset": offset, "size": len(data)},
            ).fetchone()
            if row is None:
                raise self._why_not(conn, upload_id, owner_id, offset)
            written = conn.execute(
                query("extend_chunk" if within else "append_chunk"),
                {"blob_id": row["blob_id"], "seq": seq, "data": data},
            ).fetchone()
            if written is None:  # the chunk before it is missing: never commit an offset without its bytes
                raise RuntimeError(f"upload {_short(upload_id)}: no chunk to extend at {offset}")
        return offset + len(data)

    @staticmethod
    def _why_not(conn: DictConnection, upload_id: str, owner_id: int, offset: int) -> TranscriberError:
        row = conn.execute(query("upload_state"), {"id": upload_id, "owner_id": owner_id}).fetchone()
        if row is None or row["finished_at"] is not None:
            return UploadGone("no such upload")
        if row["received"] != offset:
            return OffsetMismatch(f"the upload's offset is {row['received']}, not {offset}")
        return PastLength(f"the bytes would go past the upload's length of {row['upload_length']}")

    def declare_upload_length(self, upload_id: str, owner_id: int, length: int) -> bool:
        """Make a deferred length known (or confirm the one declared); False when the upload has
        another length, has more bytes than that, or is finished or gone."""
        with self.db.connection() as conn:
            row = conn.execute(
                query("declare_upload_length"), {"id": upload_id, "owner_id": owner_id, "upload_length": length}
            ).fetchone()
        return row is not None

    def upload_bytes(self, blob_id: int, batch: int = 4) -> Iterator[bytes]:
        """The bytes of an unfinished upload's blob, a few chunks per round trip."""
        return chunks_of(self.db, "upload_chunks", blob_id, batch)

    def finish_upload(
        self, upload_id: str, owner_id: int, new: NewRecord, same: SameUpload | None = None
    ) -> tuple[int, bool]:
        """Make the record of a complete upload whose bytes intake has checked: its id, and
        whether it is new (False: another request finished it first). The owner's quota is
        weighed as for any intake (QuotaExceeded: nothing changed). UploadGone when the upload
        is missing or its bytes are not all there."""
        with self.db.transaction() as conn:
            row = conn.execute(query("lock_upload_row"), {"id": upload_id, "owner_id": owner_id}).fetchone()
            if row is None:
                raise UploadGone("no such upload")
            if row["finished_at"] is not None:
                made: int = row["record_id"]
                return made, False
            if row["upload_length"] != row["received"]:
                raise UploadGone(f"upload {_short(upload_id)} is not complete")
            blob_id, received = row["blob_id"], row["received"]
            conn.execute(query("hand_over_upload"), {"id": upload_id, "record_id": None})
            size = finish_blob(conn, blob_id, -(-received // CHUNK_BYTES))
            if size is None or size != received:
                raise RuntimeError(f"upload {_short(upload_id)}: its audio blob {blob_id} is not whole")
            hold_quota(conn, owner_id, new.declared_seconds, size)
            record_id = insert_record(conn, owner_id, blob_id, size, new, same)
            conn.execute(query("hand_over_upload"), {"id": upload_id, "record_id": record_id})
            if new.cut_short:
                conn.execute(query("journal_cut_short"), {"record_id": record_id, "received": received})
        record_log(record_id, "created", "accepted").info(
            "record {} accepted from resumable upload {} ({} bytes{})",
            record_id,
            _short(upload_id),
            size,
            ", cut short: its uploader went quiet" if new.cut_short else "",
        )
        return record_id, True

    def remove_upload(self, upload_id: str, owner_id: int) -> bool:
        """Termination (or a refusal at the end): the upload goes, and its bytes unless a record
        has them. False when there was no such upload of the owner's."""
        with self.db.connection() as conn:
            row = conn.execute(query("remove_upload"), {"id": upload_id, "owner_id": owner_id}).fetchone()
        if row is None:
            return False
        if row["blob_id"] is not None:
            discard_blob(self.db, row["blob_id"], complete=False)
        logger.info("resumable upload {} removed", _short(upload_id))
        return True

    def cut_idle_recordings(self, idle_seconds: float, batch: int = SWEEP_UPLOADS_BATCH) -> list[DictRow]:
        """Deferred-length uploads idle for `idle_seconds`: their length becomes what arrived
        (to be finished as records cut short); id and owner_id of each."""
        with self.db.connection() as conn:
            return conn.execute(query("cut_idle_recording"), {"idle_seconds": idle_seconds, "batch": batch}).fetchall()

    def stranded_uploads(self, grace_seconds: float, batch: int = SWEEP_UPLOADS_BATCH) -> list[DictRow]:
        """Complete uploads no record was made of for `grace_seconds`: id and owner_id."""
        with self.db.connection() as conn:
            return conn.execute(query("stranded_uploads"), {"grace_seconds": grace_seconds, "batch": batch}).fetchall()

    def expire_uploads(self, expiry_seconds: float, batch: int = SWEEP_UPLOADS_BATCH) -> int:
        """Remove the uploads idle for `expiry_seconds` (with the bytes of the unfinished ones),
        in bounded batches; how many went."""
        removed = 0
        while True:
            with self.db.connection() as conn:
                rows = conn.execute(
                    query("expire_uploads"), {"expiry_seconds": expiry_seconds, "batch": batch}
                ).fetchall()
            for row in rows:
                if row["blob_id"] is not None:
                    discard_blob(self.db, row["blob_id"], complete=False)
            removed += len(rows)
            if len(rows) < batch:
                return removed


def _short(upload_id: str) -> str:
    """An upload's id as the log names it: enough to tell uploads apart, not its address."""
    return upload_id[:8]
