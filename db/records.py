"""A record's life outside the pipeline: intake creates it, its owner edits it, a human deletes it
for good. The statements are in `queries/records.sql`.
"""
from __future__ import annotations

from typing import Iterable

from db.blobs import discard_blob, finish_blob, write_chunks
from db.database import Database
from db.pipeline import record_log
from db.queries import query


class Records:
    """Intake, the owner's edit and deletion; a part of `db.store.Store`."""

    db: Database

    def accept(self, owner_id: int, pieces: Iterable[bytes], *, title: str = "", source_name: str = "",
               media_type: str = "application/octet-stream", language: str | None = None,
               prompt: str | None = None) -> int:
        """Store the original audio and create its record at stage created.

        The audio goes in committed chunks like any blob (no transaction as long as the upload,
        however large the limit allows); one short transaction then marks it complete and
        inserts the record. Anything that fails on the way takes the partial audio away again
        (the sweep does, if even that fails): nothing is accepted, nothing stays."""
        blob_id, chunks = write_chunks(self.db, pieces, media_type)  # ValueError when empty
        try:
            with self.db.transaction() as conn:
                size = finish_blob(conn, blob_id, chunks)
                if size is None:
                    raise RuntimeError(f"audio blob {blob_id} was removed while it was being stored")
                record_id = conn.execute(
                    query("accept_record"),
                    {"owner_id": owner_id, "title": title, "source_name": source_name, "blob_id": blob_id,
                     "size_bytes": size, "language": language, "prompt": prompt},
                ).fetchone()["id"]
        except BaseException:
            discard_blob(self.db, blob_id, complete=False)
            raise
        record_log(record_id, "created", "accepted").info("record {} accepted ({} bytes)", record_id, size)
        return record_id

    def edit(self, record_id: int, owner_id: int, *, title: str | None = None, summary: str | None = None,
             topics: list[str] | None = None) -> bool:
        """The owner's edit of the fields the pipeline never writes; None leaves a field alone.
        False when the owner has no such record."""
        with self.db.transaction() as conn:
            row = conn.execute(
                query("edit_record"),
                {"id": record_id, "owner_id": owner_id, "title": title, "summary": summary, "topics": topics},
            ).fetchone()
        return row is not None

    def delete_record(self, record_id: int, owner_id: int | None, *, by: str, role: str) -> str | None:
        """Erase the record, its audio and its text, and every journal line about it but one:
        that `by` (acting as `role`) deleted it. The owner's own only, unless `owner_id` is None.
        Returns the stage it had reached, or None when there is no such record of that owner.

        The record's row is deleted first, so a step's write in flight finishes before it (and
        is then erased too) or finds no row after it (refused; its late journal line is dropped).
        Its windows go with it; its audio, which no record points at any more, is deleted right
        after, in bounded batches (the sweep finds what a crash in between left).
        """
        with self.db.transaction() as conn:
            row = conn.execute(query("erase_record"), {"id": record_id, "owner_id": owner_id}).fetchone()
            if row is None:
                return None
            conn.execute(query("journal_deletion"), {"id": record_id, "stage": row["stage"], "by": by, "role": role})
            conn.execute(query("erase_journal"), {"id": record_id})
        for blob_id in (row["original_blob_id"], row["converted_blob_id"]):
            if blob_id is not None:
                discard_blob(self.db, blob_id)
        record_log(record_id, row["stage"], "deleted").info(
            "record {} deleted for good by {} {}", record_id, role, by)
        return row["stage"]
