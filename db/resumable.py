"""Resumable uploads (tus, `web.tus`) in the database: an upload is a row and an intake blob
filled in place, so any API process answers any of its requests and a crash loses no byte that
was acknowledged. The statements are in `queries/resumable.sql`.

Bytes go in pieces that never cross a chunk boundary (`piece_room`): each piece is one short
transaction that moves the upload's offset from where its writer found it and writes the piece
into its chunk (a new chunk, or the end of the last one, shorter when an earlier request stopped
inside it), so the committed offset and the committed bytes never disagree and two requests at
the same offset cannot both write. The blob keeps the chunks of every other blob (CHUNK_BYTES
each but the last), so a record made of it is read like any other.

Finishing is one transaction too (`finishing`): it begins by claiming the upload's row (locked
until it ends, the one statement that decides who finishes), the finisher copies and checks the
bytes, and the one intake then marks the row finished and hands its blob to the new record in
that same transaction (`finish_upload`), or the refusal removes the upload. Any other finisher
at once, a request or the sweep of any process, finds the row held and copies nothing: it answers
with the upload as it stands, or (the request that brought the last byte) waits for the outcome.
A finisher that dies lets go with its connection, and the next one finishes the upload: one
record, however many try.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

from loguru import logger
from psycopg.rows import DictRow

from db.blobs import CHUNK_BYTES, chunks_of, discard_blob, finish_blob
from db.database import CONNECT_TIMEOUT_SECONDS, Database, PooledConnection
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


@dataclass
class Finishing:
    """A finisher's hold on an upload (`ResumableUploads.finishing`). `held`: this finisher makes
    its record: the row is locked by `conn`'s transaction until the block ends, and each statement
    the thread runs inside the block runs there too (`Database.on`), so finishing takes no pooled
    connection. Not held: the upload as it stands, finished (`record_id`), not complete yet, or
    held by another finisher."""

    conn: PooledConnection
    row: DictRow
    held: bool
    record_id: int | None = None
    made: bool = False  # this finisher made the record (committed when the block ends)
    discarded: int | None = None  # the blob of a refused upload, deleted once the removal commits

    def refuse(self) -> None:
        """Bytes intake refused: the upload goes in the finisher's transaction, its blob after."""
        row = self.conn.execute(query("remove_upload"), {"id": self.row["id"], "owner_id": self.row["owner_id"]})
        removed = row.fetchone()
        self.held, self.discarded = False, None if removed is None else removed["blob_id"]


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

    @contextlib.contextmanager
    def finishing(self, upload_id: str, owner_id: int, *, wait: bool = False) -> Iterator[Finishing]:
        """Hold a complete upload to make its record (`Finishing`), on a connection of its own.
        One another finisher holds is answered at once as it stands, or with `wait` once that
        finisher is done. UploadGone when there is no such upload of the owner's."""
        params = {"id": upload_id, "owner_id": owner_id}
        conn = self.db.own_connection(CONNECT_TIMEOUT_SECONDS)
        try:
            with conn.transaction():
                row = conn.execute(query("await_upload_finish" if wait else "claim_upload_finish"), params).fetchone()
                if row is None:  # another finisher holds it, or there is no such upload
                    row = conn.execute(query("upload_state"), params).fetchone()
                    if row is None:
                        raise UploadGone("no such upload")
                    held = False
                else:
                    held = row["finished_at"] is None and row["upload_length"] == row["received"]
                finishing = Finishing(conn, row, held, row["record_id"] if row["finished_at"] is not None else None)
                with self.db.on(conn):
                    yield finishing
        finally:
            conn.close()
        if finishing.made and finishing.record_id is not None:
            record_log(finishing.record_id, "created", "accepted").info(
                "record {} accepted from resumable upload {} ({} bytes{})",
                finishing.record_id,
                _short(upload_id),
                finishing.row["received"],
                ", cut short: its uploader went quiet" if finishing.row["cut_short"] else "",
            )
        if finishing.discarded is not None:
            discard_blob(self.db, finishing.discarded, complete=False)

    def finish_upload(
        self, finishing: Finishing, owner_id: int, new: NewRecord, same: SameUpload | None = None
    ) -> tuple[int, bool]:
        """Make the record of the complete upload `finishing` holds, whose bytes intake has
        checked, in the finisher's transaction: its id, and True (a new record). The owner's quota
        is weighed as for any intake (QuotaExceeded: nothing of this changed)."""
        if not finishing.held:
            raise RuntimeError("an upload's record is made only by the finisher that holds it")
        conn, upload_id = finishing.conn, finishing.row["id"]
        blob_id, received = finishing.row["blob_id"], finishing.row["received"]
        with conn.transaction():  # a savepoint: refused, the finisher removes the upload
            conn.execute(query("hand_over_upload"), {"id": upload_id, "record_id": None})
            size = finish_blob(conn, blob_id, -(-received // CHUNK_BYTES))
            if size is None or size != received:
                raise RuntimeError(f"upload {_short(upload_id)}: its audio blob {blob_id} is not whole")
            hold_quota(conn, owner_id, new.declared_seconds, size)
            record_id = insert_record(conn, owner_id, blob_id, size, new, same)
            conn.execute(query("hand_over_upload"), {"id": upload_id, "record_id": record_id})
            if new.cut_short:
                conn.execute(query("journal_cut_short"), {"record_id": record_id, "received": received})
        finishing.held, finishing.record_id, finishing.made = False, record_id, True
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
