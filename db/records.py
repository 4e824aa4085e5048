"""A record's life outside the pipeline: intake creates it, its owner edits it, a human deletes it
for good. The statements are in `queries/records.sql`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from loguru import logger
from psycopg.types.json import Jsonb

from db.blobs import discard_blob, finish_blob, write_chunks
from db.database import Database
from db.journal import record_log
from db.queries import query
from db.quotas import QuotaExceeded, check_quota, hold_quota
from db.rows import DictConnection, only_row
from db.uploads import SameUpload, earlier_record, keep_key
from db.voices import drop_empty_voices, record_voices
from domain.asked import Asked
from domain.stages import Step


@dataclass(frozen=True)
class NewRecord:
    """What a new record is made with besides its audio: the upload's title and file name, what it
    asks of recognition and the length its file declares."""

    title: str = ""
    source_name: str = ""
    media_type: str = "application/octet-stream"
    asked: Asked = field(default_factory=Asked)
    declared_seconds: float | None = None
    # a recording whose uploader went quiet before it stopped: what arrived (`db.resumable`)
    cut_short: bool = False


class Records:
    """Intake, the owner's edit and deletion; a part of `db.store.Store`."""

    db: Database

    def accept(self, owner_id: int, pieces: Iterable[bytes], *, expected_bytes: int | None = None, **asked: Any) -> int:
        """`store_recording` with no earlier upload to repeat: the new record's id. The bytes are
        stored as given, without intake's checks (`service.intake.accept_recording` is the way
        in for users); the tests and benchmarks make their records this way. `asked`: the fields
        of a NewRecord."""
        return self.store_recording(owner_id, pieces, NewRecord(**asked), expected_bytes=expected_bytes)[0]

    def store_recording(
        self,
        owner_id: int,
        pieces: Iterable[bytes],
        new: NewRecord,
        *,
        expected_bytes: int | None = None,
        same: SameUpload | None = None,
    ) -> tuple[int, bool]:
        """Store the original audio and create its record at stage created, unless `same` says
        an earlier upload already made it (`db.uploads`): the record's id, and whether it is new.

        The audio goes in committed chunks like any blob (no transaction as long as the upload,
        however large the limit allows); one short transaction then decides whether the upload
        is a new one, marks the audio complete and inserts the record. Anything that fails on the
        way takes the partial audio away again (the sweep does, if even that fails): nothing is
        accepted, nothing stays. A repeat's audio is taken away the same way.

        The owner's quota (`new.declared_seconds`: the length the file declares) is weighed before
        anything is stored when `expected_bytes` is given, and always in that last transaction
        with the owner's intake locked: a new upload over a limit raises QuotaExceeded (a
        repeat answered by its earlier record costs nothing)."""
        if expected_bytes is not None:
            check_quota(self.db, owner_id, new.declared_seconds, expected_bytes)
        blob_id, chunks = write_chunks(self.db, pieces, new.media_type)  # ValueError when empty
        try:
            with self.db.transaction() as conn:
                earlier = None if same is None else earlier_record(conn, owner_id, same, new.asked, lock=True)
                if earlier is None:
                    size = finish_blob(conn, blob_id, chunks)
                    if size is None:
                        raise RuntimeError(f"audio blob {blob_id} was removed while it was being stored")
                    hold_quota(conn, owner_id, new.declared_seconds, size)
                    record_id = insert_record(conn, owner_id, blob_id, size, new, same)
        except QuotaExceeded as refused:
            discard_blob(self.db, blob_id, complete=False)
            logger.info("an upload of owner {} refused: {} quota", owner_id, refused.over.kind)
            raise
        except BaseException:
            discard_blob(self.db, blob_id, complete=False)
            raise
        if earlier is not None:
            discard_blob(self.db, blob_id, complete=False)
            record_log(earlier, "", "repeated").info("record {}: the same upload again, answered by it", earlier)
            return earlier, False
        record_log(record_id, "created", "accepted").info("record {} accepted ({} bytes)", record_id, size)
        return record_id, True

    def edit(
        self,
        record_id: int,
        owner_id: int,
        *,
        title: str | None = None,
        summary: str | None = None,
        topics: list[str] | None = None,
    ) -> bool:
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
        Its windows and its speakers' samples go with it (a voice left without any goes too);
        its audio, which no record points at any more, is deleted right after, in bounded
        batches (the sweep finds what a crash in between left).
        """
        with self.db.transaction() as conn:
            voiced = record_voices(conn, record_id)
            row = conn.execute(query("erase_record"), {"id": record_id, "owner_id": owner_id}).fetchone()
            if row is None:
                return None
            drop_empty_voices(conn, voiced)  # its speakers' samples went with it
            conn.execute(query("journal_deletion"), {"id": record_id, "stage": row["stage"], "by": by, "role": role})
            conn.execute(query("erase_journal"), {"id": record_id})
        for blob_id in (row["original_blob_id"], row["converted_blob_id"]):
            if blob_id is not None:
                discard_blob(self.db, blob_id)
        stage: str = row["stage"]
        record_log(record_id, stage, "deleted").info("record {} deleted for good by {} {}", record_id, role, by)
        return stage


def insert_record(
    conn: DictConnection, owner_id: int, blob_id: int, size: int, new: NewRecord, same: SameUpload | None
) -> int:
    """The new record, queued for its first step, inside intake's transaction; with `same`, the
    upload's key or bytes kept to answer a repeat."""
    params = {
        "owner_id": owner_id,
        "blob_id": blob_id,
        "size_bytes": size,
        "title": new.title,
        "source_name": new.source_name,
        "language": new.asked.language,
        "prompt": new.asked.prompt,
        "intake_seconds": new.declared_seconds,
        "speakers_wanted": new.asked.speakers,
        "asked": Jsonb(new.asked.value()),
        "content_sha256": same and same.sha256,
        "first_step": Step.first().value,
        "cut_short": new.cut_short,
    }
    record_id: int = only_row(conn.execute(query("accept_record"), params))["id"]
    if same is not None:
        keep_key(conn, owner_id, same, record_id)
    return record_id
