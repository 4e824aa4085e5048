"""Audio kept in the database as blobs: ordered chunks, so a worker on another machine needs only
the database URL and nobody holds a whole recording in memory.

A blob is written in committed chunks, one transaction each, so memory and the length of any
transaction are bounded by a chunk whatever the recording's length; it is usable (a record
points at it, a reader reads it) only once marked complete. A conversion's chunks are fenced by
its claim. Blobs are taken apart in bounded batches too, once no record points at them; the
sweep finds what a crash left behind (an incomplete blob of a dead writer, or a blob let go and
not yet deleted). The statements are in `queries/blobs.sql`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NoReturn

from loguru import logger

from db.database import Database
from db.journal import refuse
from db.queries import query
from db.rows import DictConnection, only_row
from domain.claims import Claim, ClaimLost

CHUNK_BYTES = 1 << 20
# chunks deleted per transaction: 32 MiB, about 0.1-0.2 s
DELETE_BATCH_CHUNKS = 32
# blob ids the sweep looks at per statement: about 10 ms with 400,000 blobs
SWEEP_BATCH = 1000


@dataclass(frozen=True)
class SweepPass:
    """What one bounded run of the sweep did: blobs removed, and the blob id to go on after
    (0: the pass reached the last blob)."""

    removed: int
    resume_after: int


def write_chunks(
    db: Database, pieces: Iterable[bytes], media_type: str, writer: Claim | None = None
) -> tuple[int, int]:
    """Store a byte stream as a new, incomplete blob, each chunk committed on its own; its id and
    how many chunks it has. `writer` is the conversion's claim: a chunk is refused once that
    claim is no longer the record's (ClaimLost). Whatever stops the write midway (a refused
    chunk, the stream's own error, a stopping worker), the partial blob is taken away again."""
    chunks = _rechunk(pieces, CHUNK_BYTES)
    first = next(chunks, None)
    if first is None:
        raise ValueError("nothing to store: the file is empty")
    with db.connection() as conn:
        blob_id: int = only_row(
            conn.execute(
                query("create_blob"),
                {
                    "media_type": media_type,
                    "writer_record_id": writer and writer.record_id,
                    "writer_token": writer and writer.token,
                },
            )
        )["id"]
    written = 0
    try:
        for seq, chunk in enumerate(itertools.chain([first], chunks)):
            with db.connection() as conn:
                appended = conn.execute(query("append_chunk"), {"blob_id": blob_id, "seq": seq, "data": chunk})
                if appended.fetchone() is None:
                    _refused(conn, blob_id, writer, "audio_chunk")
            written = seq + 1
    except BaseException:
        discard_blob(db, blob_id, complete=False)
        raise
    return blob_id, written


def finish_blob(conn: DictConnection, blob_id: int, chunks: int) -> int | None:
    """Mark the blob complete inside the caller's transaction; its size, or None when refused: a
    conversion's claim moved on, or a chunk went missing (the sweep took the blob)."""
    conn.execute(query("lock_blob"), {"blob_id": blob_id})
    row = conn.execute(query("finish_blob"), {"blob_id": blob_id, "chunks": chunks}).fetchone()
    size: int | None = None if row is None else row["size_bytes"]
    return size


def drop_blob(db: Database, blob_id: int, *, complete: bool = True, batch: int = DELETE_BATCH_CHUNKS) -> bool:
    """Delete a blob no record points at, `batch` chunks per transaction, then its row; whether it
    went. `complete` is what the caller saw it as: a blob that changed meanwhile (a writer
    finished it) or that a record points at is left alone."""
    while True:
        with db.connection() as conn:
            row = only_row(
                conn.execute(query("delete_blob_chunks"), {"blob_id": blob_id, "complete": complete, "batch": batch})
            )
        if not row["doomed"]:
            return False
        if row["deleted"] < batch:
            break
    with db.connection() as conn:
        return conn.execute(query("delete_blob"), {"blob_id": blob_id, "complete": complete}).fetchone() is not None


class Blobs:
    """Blobs on their own; a part of `db.store.Store`."""

    db: Database

    def store_blob(self, pieces: Iterable[bytes], media_type: str, *, writer: Claim | None = None) -> tuple[int, int]:
        """Store a byte stream as a complete blob, in committed chunks; its id and size."""
        blob_id, chunks = write_chunks(self.db, pieces, media_type, writer)
        try:
            with self.db.transaction() as conn:
                size = finish_blob(conn, blob_id, chunks)
            if size is None:
                with self.db.connection() as conn:
                    _refused(conn, blob_id, writer, "audio_complete")
        except BaseException:
            discard_blob(self.db, blob_id, complete=False)
            raise
        return blob_id, size

    def read_blob(self, blob_id: int, batch: int = 4, *, start_byte: int = 0) -> Iterator[bytes]:
        """The blob's bytes from `start_byte` on, chunk by chunk; a few chunks are fetched per
        round trip. Chunks before the start are not read at all."""
        seq, skip = divmod(start_byte, CHUNK_BYTES)
        for data in chunks_of(self.db, "read_chunks", blob_id, batch, seq):
            if skip:
                data, skip = data[skip:], 0
            if data:
                yield data

    def delete_blob(self, blob_id: int) -> bool:
        """Delete a complete blob no record points at, in bounded batches."""
        return drop_blob(self.db, blob_id)

    def sweep_orphan_blobs(
        self, grace_seconds: float, *, budget_seconds: float | None = None, after_id: int = 0, batch: int | None = None
    ) -> SweepPass:
        """Delete the blobs no record points at and nobody writes any more (left by a worker that
        died mid-conversion, or between a save that let audio go and its deletion), once
        `grace_seconds` old: keyset batches of `batch` blob ids from `after_id` on, each a short
        statement of index probes. Stops at the end of the blobs, or at the first batch boundary
        past `budget_seconds`, and says where to go on from."""
        deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
        batch = batch or SWEEP_BATCH
        removed = 0
        while True:
            with self.db.connection() as conn:
                found = only_row(
                    conn.execute(
                        query("orphan_blobs"), {"after_id": after_id, "batch": batch, "grace_seconds": grace_seconds}
                    )
                )
            for blob_id, complete in zip(found["orphans"], found["complete"], strict=True):
                removed += drop_blob(self.db, blob_id, complete=complete)
            if found["scanned"] < batch:
                return SweepPass(removed, 0)
            after_id = found["scanned_to"]
            if deadline is not None and time.monotonic() >= deadline:
                return SweepPass(removed, after_id)


def chunks_of(db: Database, statement: str, blob_id: int, batch: int, from_seq: int = 0) -> Iterator[bytes]:
    """A blob's chunks from `from_seq` on, read by the named `statement` (of a complete blob, or
    of an upload's blob still being filled), `batch` chunks per round trip."""
    seq = from_seq
    while True:
        with db.connection() as conn:
            rows = conn.execute(query(statement), {"blob_id": blob_id, "from_seq": seq, "limit": batch}).fetchall()
        for row in rows:
            yield bytes(row["data"])
        if len(rows) < batch:
            return
        seq = rows[-1]["seq"] + 1


def _refused(conn: DictConnection, blob_id: int, writer: Claim | None, write: str) -> NoReturn:
    """A blob write that took no effect: for a conversion, its claim moved on (journaled as any
    refused holder write); for an intake, the blob was taken away under it."""
    if writer is None:
        raise RuntimeError(f"audio blob {blob_id} was removed while it was being stored")
    refuse(conn, writer, write)
    raise ClaimLost()


def discard_blob(db: Database, blob_id: int, *, complete: bool = True) -> None:
    """Delete a blob no record needs (drop_blob), and if even that fails, leave it to the sweep."""
    try:
        drop_blob(db, blob_id, complete=complete)
    except Exception as error:  # noqa: BLE001 - the original error is the one to raise
        logger.warning("audio blob {} left to the sweep: {}", blob_id, type(error).__name__)


def _rechunk(pieces: Iterable[bytes], size: int) -> Iterator[bytes]:
    """The stream cut into chunks of `size` bytes, the last one shorter."""
    buffer = bytearray()
    for piece in pieces:
        buffer += piece
        while len(buffer) >= size:
            yield bytes(buffer[:size])
            del buffer[:size]
    if buffer:
        yield bytes(buffer)
