"""Audio kept in the database as blobs: ordered chunks, so a worker on another machine needs only
the database URL and nobody holds a whole recording in memory.

Writing, streaming back, deleting, and the sweep of blobs no record points at; the statements
are in `queries/blobs.sql`.
"""
from __future__ import annotations

from typing import Iterable, Iterator

import psycopg

from db.database import Database
from db.queries import query

CHUNK_BYTES = 1 << 20


def write_blob(conn: psycopg.Connection, pieces: Iterable[bytes], media_type: str) -> tuple[int, int]:
    """Store a byte stream as a blob in chunks, inside the caller's transaction; its id and size."""
    blob_id = conn.execute(query("create_blob"), {"media_type": media_type}).fetchone()["id"]
    for seq, chunk in enumerate(_rechunk(pieces, CHUNK_BYTES)):
        conn.execute(query("append_chunk"), {"blob_id": blob_id, "seq": seq, "data": chunk})
    size = conn.execute(query("finish_blob"), {"blob_id": blob_id}).fetchone()["size_bytes"]
    return blob_id, size


class Blobs:
    """Blobs on their own; a part of `db.store.Store`."""

    db: Database

    def store_blob(self, pieces: Iterable[bytes], media_type: str) -> tuple[int, int]:
        """Store a byte stream as a blob in a transaction of its own; its id and size."""
        with self.db.transaction() as conn:
            return write_blob(conn, pieces, media_type)

    def read_blob(self, blob_id: int, batch: int = 4, *, start_byte: int = 0) -> Iterator[bytes]:
        """The blob's bytes from `start_byte` on, chunk by chunk; a few chunks are fetched per
        round trip. Chunks before the start are not read at all."""
        seq, skip = divmod(start_byte, CHUNK_BYTES)
        while True:
            with self.db.connection() as conn:
                rows = conn.execute(query("read_chunks"), {"blob_id": blob_id, "from_seq": seq, "limit": batch}).fetchall()
            for row in rows:
                data = bytes(row["data"])
                if skip:
                    data, skip = data[skip:], 0
                if data:
                    yield data
            if len(rows) < batch:
                return
            seq = rows[-1]["seq"] + 1

    def delete_blob(self, blob_id: int) -> None:
        with self.db.transaction() as conn:
            conn.execute(query("delete_blob"), {"blob_id": blob_id})

    def delete_orphan_blobs(self, older_than_seconds: float) -> int:
        """Delete the blobs no record points at, older than `older_than_seconds` (left by a worker
        that died mid-conversion or a refused save); how many went."""
        with self.db.transaction() as conn:
            return len(conn.execute(query("delete_orphan_blobs"), {"older_than_seconds": older_than_seconds}).fetchall())


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
