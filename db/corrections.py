"""The owner's corrections of a record's text: edits of segments and of single words, written
apart from the recognised text (P3). Reading them is the read side's (`db.reads`, `transcript`);
the statements are in `queries/corrections.sql`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from db.database import Database
from db.journal import record_log
from db.meaning import remake_passages
from db.queries import query
from db.rows import DictConnection
from domain.corrections import NoSuchSegment, NotDone, one_word_changed, retimed, text_of_words


class Corrections:
    """The owner's edits of the text; a part of `db.store.Store`."""

    db: Database

    def correct_segments(
        self,
        record_id: int,
        owner_id: int | None,
        edits: Sequence[tuple[int, str]],
        *,
        by: str,
        role: str = "owner",
        words: Sequence[tuple[int, int, str]] = (),
        embeddings: Mapping[str, Sequence[float]] | None = None,
        embed: Callable[[list[str]], Mapping[str, Sequence[float]]] | None = None,
    ) -> bool:
        """Give the owner's record's segments (place from 0, new text) their new texts, then
        single words (segment, word's place from 0, new word) theirs, all or none: the words a
        segment edit kept keep their times, new ones share the span between their neighbours; a
        word edit keeps every other word and time of its segment (as the owner reads it: with an
        earlier correction) and the word's own times. Each is journaled as `corrected` by `by`
        acting as `role` (origin human), with no text. The owner's record only, unless
        `owner_id` is None (the operator's command). False when there is no such record; NotDone
        before the record is done, NoSuchSegment for a segment it lacks, NoSuchWord for a word
        its segment lacks. The texts must already be checked (`service.inputs.TextEdit`).

        The passages that hold the edited segments are made again in the same transaction, each
        with the embedding `embeddings` gives its new text, the texts it lacks given to `embed`
        (`db.meaning.remake_passages`): an exception there undoes the whole edit."""
        with self.db.transaction() as conn:
            for segment, text in edits:
                found = _segment(conn, record_id, owner_id, segment)
                if found is None:
                    return False
                timed = retimed(found["words"], found["start_seconds"], found["end_seconds"], text)
                _write(conn, record_id, owner_id, segment, found, text, timed, by=by, role=role)
            for segment, place, word in words:
                found = _segment(conn, record_id, owner_id, segment)
                if found is None:
                    return False
                shown = found["corrected_words"] if found["corrected_words"] is not None else found["words"]
                timed = one_word_changed(shown, word, record_id=record_id, segment=segment, index=place)
                _write(
                    conn, record_id, owner_id, segment, found, text_of_words(timed), timed, by=by, role=role, word=place
                )
            edited = sorted({segment + 1 for segment, _ in edits} | {segment + 1 for segment, _, _ in words})
            remake_passages(conn, record_id, edited, embeddings or {}, embed)
        log = record_log(record_id, "done", "corrected")
        log.info("record {}: {} segment(s), {} word(s) corrected by {}", record_id, len(edits), len(words), by)
        return True


def _segment(conn: DictConnection, record_id: int, owner_id: int | None, segment: int) -> DictRow | None:
    """The record's segment `segment` as an edit starts from (None: no such record of the
    owner's); NotDone before the record is done, NoSuchSegment for a segment it lacks."""
    found = conn.execute(
        query("segment_to_correct"), {"id": record_id, "owner_id": owner_id, "segment": segment}
    ).fetchone()
    if found is None:
        return None
    if found["stage"] != "done":
        raise NotDone(record_id, found["stage"])
    if found["start_seconds"] is None or found["text"] is None:
        raise NoSuchSegment(record_id, segment)
    return found


def _write(
    conn: DictConnection,
    record_id: int,
    owner_id: int | None,
    segment: int,
    found: DictRow,
    text: str,
    words: list[dict[str, Any]],
    *,
    by: str,
    role: str,
    word: int | None = None,
) -> None:
    """The segment's correction written (its text and timed words) and journaled."""
    params = {
        "id": record_id,
        "owner_id": owner_id,
        "segment": segment,
        "start": found["start_seconds"],
        "end": found["end_seconds"],
        "text": text,
        "words": Jsonb(words),
        "by": by,
        "role": role,
        "word": word,
    }
    if conn.execute(query("correct_segment"), params).fetchone() is None:
        raise RuntimeError(f"record {record_id}: a done record's correction was not written")
