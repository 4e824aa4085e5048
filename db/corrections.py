"""The owner's corrections of a record's text: edits of segments, written apart from the
recognised text (P3). Reading them is the read side's (`db.reads`, `transcript`); the statements
are in `queries/corrections.sql`."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg.types.json import Jsonb

from db.database import Database
from db.journal import record_log
from db.queries import query
from domain.corrections import NoSuchSegment, NotDone, retimed


class Corrections:
    """The owner's edits of the text; a part of `db.store.Store`."""

    db: Database

    def correct_segments(
        self, record_id: int, owner_id: int | None, edits: Sequence[tuple[int, str]], *, by: str, role: str = "owner"
    ) -> bool:
        """Give the owner's record's segments (place from 0, new text) their new texts, all or
        none: the words an edit kept keep their times, new ones share the span between their
        neighbours. Each is journaled as `corrected` by `by` acting as `role` (origin human), with
        no text. The owner's record only, unless `owner_id` is None (the operator's command).
        False when there is no such record; NotDone before the record is done, NoSuchSegment for
        a segment it lacks. The texts must already be checked (`service.inputs.SegmentText`)."""
        with self.db.transaction() as conn:
            for segment, text in edits:
                found = conn.execute(
                    query("segment_to_correct"), {"id": record_id, "owner_id": owner_id, "segment": segment}
                ).fetchone()
                if found is None:
                    return False
                if found["stage"] != "done":
                    raise NotDone(record_id, found["stage"])
                if found["start_seconds"] is None or found["text"] is None:
                    raise NoSuchSegment(record_id, segment)
                start, end = found["start_seconds"], found["end_seconds"]
                params = {
                    "id": record_id,
                    "owner_id": owner_id,
                    "segment": segment,
                    "start": start,
                    "end": end,
                    "text": text,
                    "words": Jsonb(retimed(found["words"], start, end, text)),
                    "by": by,
                    "role": role,
                }
                if conn.execute(query("correct_segment"), params).fetchone() is None:
                    raise RuntimeError(f"record {record_id}: a done record's correction was not written")
        log = record_log(record_id, "done", "corrected")
        log.info("record {}: {} segment(s) corrected by {}", record_id, len(edits), by)
        return True
