"""What owners and the operator read: cards, lists, the transcript, the journal, the original
audio, and the counts of the status command and the metrics. Nothing here writes.

A card's columns are named once, by the `cards` view (db/schema.txt); the statements are in
`queries/reads.sql`.
"""

from __future__ import annotations

from typing import Any

from psycopg.rows import DictRow

from db.database import Database
from db.queries import query
from db.rows import only_row
from domain.asked import TRANSLATE
from domain.corrections import CORRECTED, ENGLISH, RECOGNISED, NotTranslated, corrected_transcript, text_of


class Reads:
    """The read side; a part of `db.store.Store`."""

    db: Database

    def card_row(self, record_id: int, owner_id: int | None = None) -> DictRow | None:
        """The card's columns of the record; of that owner's record only, unless `owner_id` is
        None (the operator's tools)."""
        with self.db.connection() as conn:
            return conn.execute(query("card"), {"id": record_id, "owner_id": owner_id}).fetchone()

    def list_card_rows(self, owner_id: int, limit: int, offset: int) -> tuple[list[DictRow], int]:
        """One page of the owner's cards, newest first, and how many records the owner has."""
        with self.db.transaction() as conn:
            rows = conn.execute(
                query("list_cards"), {"owner_id": owner_id, "limit": limit, "offset": offset}
            ).fetchall()
            total: int = only_row(conn.execute(query("count_records"), {"owner_id": owner_id}))["total"]
        return rows, total

    def halted_records(self, limit: int, offset: int) -> tuple[list[DictRow], int]:
        """One page of the operator's list of halted records, oldest halt first, and how many."""
        with self.db.transaction() as conn:
            rows = conn.execute(query("halted_records"), {"limit": limit, "offset": offset}).fetchall()
            total: int = only_row(conn.execute(query("count_halted")))["total"]
        return rows, total

    def transcript(
        self, record_id: int, owner_id: int | None = None, version: str = CORRECTED
    ) -> dict[str, Any] | None:
        """The record's stage, text and duration, and once done its timed segments in order: the
        one read of the text every reader goes through (the page, the downloads, the OpenAI-
        compatible reads, the command line). `version` CORRECTED (the default) lays the owner's
        corrections on the recognised text (`domain.corrections`; `detached` lists those no
        segment has the times of any more); RECOGNISED is the text as the recognize step saved it;
        ENGLISH the English translation of a record asked to translate (NotTranslated for
        another), which corrections do not touch."""
        params = {"id": record_id, "owner_id": owner_id, "english": version == ENGLISH}
        with self.db.connection() as conn:
            row = conn.execute(query("transcript"), params).fetchone()
        if row is None:
            return None
        if version == ENGLISH:
            if row["task"] != TRANSLATE:
                raise NotTranslated(record_id)
            english = None if row["segments"] is None else text_of(row["segments"])
            return {**row, "transcript": english, "language": "en", "corrections": [], "detached": []}
        if version == RECOGNISED:
            return {**row, "detached": []}
        return corrected_transcript(row)

    def original_audio(self, record_id: int, owner_id: int) -> DictRow | None:
        """The blob, size, media type and uploaded name of the owner's original recording."""
        with self.db.transaction() as conn:
            return conn.execute(query("original_audio"), {"id": record_id, "owner_id": owner_id}).fetchone()

    def events(self, record_id: int) -> list[DictRow]:
        """The record's journal, oldest first."""
        with self.db.connection() as conn:
            return conn.execute(query("events"), {"id": record_id}).fetchall()

    def status(self) -> list[DictRow]:
        """Per stage: active, halted, waiting, claimed, and the oldest eligible record's age."""
        with self.db.connection() as conn:
            return conn.execute(query("status")).fetchall()

    def queue_counts(self) -> list[DictRow]:
        """Records per stage and halt reason, and how many wait out a pause (for the metrics): the
        counts the triggers keep, brought up to date first, so a scrape costs what changed since
        the last one and never a count of all records."""
        with self.db.transaction() as conn:
            conn.execute(query("fold_without_waiting_for_disk"))
            conn.execute(query("fold_record_counts"))
            return conn.execute(query("queue_counts")).fetchall()

    def fold_record_counts(self) -> None:
        """Fold the appended count changes into the counts (the sweep does it now and then, so
        the changes stay few even where nobody scrapes /metrics)."""
        with self.db.transaction() as conn:
            conn.execute(query("fold_without_waiting_for_disk"))
            conn.execute(query("fold_record_counts"))
