"""Search by meaning's side of the store: whether the database can serve it, the segments
passages are cut from, passages made again in an edit's transaction, and the owner's passages
nearest a query's embedding. The statements are in `queries/meaning.sql`; the passages themselves are
written by the saves that write the text (keep_passages, 0008_passages.sql)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import date

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from db.database import Database
from db.journal import record_log
from db.queries import query
from db.rows import DictConnection, only_row
from domain.passages import body_of

# an owner with more passages than this is served by the HNSW index; fewer are compared one by
# one (BENCHMARKS.md, Search by meaning)
EXACT_UP_TO = 20_000
# neighbours the HNSW walk keeps at most: pgvector's most (the owner's passages are a part of its
# partition's, the walk sized by that share: meaning_search_width)
WALK_WIDTH = 1000
_READY_RECHECK_SECONDS = 30.0


class Meaning:
    """Passages and the search by meaning; a part of `db.store.Store`."""

    db: Database
    _meaning_ready: tuple[bool, float] | None = None

    def meaning_ready(self) -> bool:
        """Whether the database has pgvector. Once it has, it is kept; until then asked again
        every 30 s (an operator may create the extension while the service runs)."""
        known = self._meaning_ready
        if known is not None and (known[0] or time.monotonic() - known[1] < _READY_RECHECK_SECONDS):
            return known[0]
        with self.db.connection() as conn:
            row = conn.execute(query("meaning_ready")).fetchone()
        ready = bool(row and row["ready"])
        self._meaning_ready = (ready, time.monotonic())
        return ready

    def passage_segments(self, record_id: int) -> list[DictRow]:
        """The record's segments in order (n from 1), with the owner's corrected text."""
        with self.db.connection() as conn:
            return conn.execute(query("passage_segments"), {"id": record_id}).fetchall()

    def passages_holding(self, record_id: int, segments: Sequence[int]) -> list[DictRow]:
        """The record's passages that hold any of `segments` (search_rows.n), each with its
        segments' texts as the search rows hold them now."""
        with self.db.connection() as conn:
            return conn.execute(query("passages_holding"), {"id": record_id, "segments": list(segments)}).fetchall()

    def passages_missing(self, after: int, limit: int) -> list[int]:
        """Up to `limit` done records owed passages (passages_owed), by id past `after`."""
        with self.db.connection() as conn:
            rows = conn.execute(query("passages_missing"), {"after": after, "limit": limit}).fetchall()
        return [row["id"] for row in rows]

    def passages_owed_count(self) -> int:
        """How many records are owed passages (for the metrics)."""
        with self.db.connection() as conn:
            row = conn.execute(query("passages_owed_count")).fetchone()
        return int(row["records"]) if row else 0

    def segment_speakers(self, record_id: int) -> list[list[str]]:
        """Each segment's speaker labels in order (n from 1; empty: not known)."""
        with self.db.connection() as conn:
            return [list(row["speakers"]) for row in conn.execute(query("segment_speakers"), {"id": record_id})]

    def backfill_passages(
        self, record_id: int, said: Sequence[tuple[str, Sequence[str]]], made: list[dict[str, object]]
    ) -> bool:
        """The record's passages (`made`, as keep_passages takes them, all of them), written only
        if its segments still hold `said` (text and speakers of each, in order) and it is still
        owed them; False when fenced out (an edit or a diarize save changed them meanwhile, a
        save paid the debt, or the record is being run again)."""
        params = {
            "id": record_id,
            "said": Jsonb([[text, list(speakers)] for text, speakers in said]),
            "passages": Jsonb(made),
        }
        with self.db.connection() as conn:
            return conn.execute(query("backfill_passages"), params).fetchone() is not None

    def owner_not_english(self, owner_id: int) -> int:
        """How many of the owner's done records are not in English (found by words only)."""
        with self.db.connection() as conn:
            row = conn.execute(query("owner_not_english"), {"owner_id": owner_id}).fetchone()
        return int(row["records"]) if row else 0

    def nearest_passages(
        self,
        owner_id: int,
        vector: str,
        *,
        limit: int,
        stage: str | None = None,
        topic: str | None = None,
        since: date | None = None,
        until: date | None = None,
        speaker: str | None = None,
    ) -> list[DictRow]:
        """The owner's `limit` passages nearest in meaning to `vector` (pgvector's text form),
        best first, with their record's title and `score` (the cosine). Only where
        `meaning_ready`.

        An owner of many passages walks the HNSW graph and filters what the walk found; a filter
        (stage, topic, dates, speaker) that keeps fewer than `limit` of them may pass passages
        beyond it, so the walk is made again at its widest, and if that too keeps fewer, the
        owner's passages that pass the filter are compared one by one: a filter never hides a
        passage it passes (BENCHMARKS.md, Search by meaning)."""
        params = {
            "owner_id": owner_id,
            "vector": vector,
            "limit": limit,
            "stage": stage,
            "topic": topic,
            "since": since,
            "until": until,
            "speaker": speaker,
            "width": WALK_WIDTH,
            "cap": EXACT_UP_TO + 1,
        }
        filtered = any(params[name] is not None for name in ("stage", "topic", "since", "until", "speaker"))
        with self.db.transaction() as conn:
            many = conn.execute(query("owner_passages_capped"), params).fetchone()
            if many is not None and many["passages"] > EXACT_UP_TO:
                width = int(only_row(conn.execute(query("meaning_search_width"), params))["width"])
                near = conn.execute(query("meaning_nearest"), params, prepare=False).fetchall()
                if len(near) >= limit or not filtered:
                    return near
                if width < WALK_WIDTH:  # a walk already at its widest is not made twice
                    conn.execute(query("meaning_widest_walk"), params)
                    near = conn.execute(query("meaning_nearest"), params, prepare=False).fetchall()
                if len(near) >= limit:
                    return near
            return conn.execute(query("meaning_exact"), params, prepare=False).fetchall()


def remake_passages(
    conn: DictConnection,
    record_id: int,
    segments: Sequence[int],
    embeddings: Mapping[str, Sequence[float]],
    embed: Callable[[list[str]], Mapping[str, Sequence[float]]] | None,
) -> None:
    """In an edit's transaction, after its writes: the record's passages that hold `segments`
    (search_rows.n) made again from the text the search rows hold now, each with the embedding
    `embeddings` gives its text, so the text and its passages change together (P3). They are
    locked first: an edit of another of their segments waits for this one's commit and then
    reads the text it left. The texts `embeddings` lacks are given to `embed` (which may raise to
    undo the edit, or embed them); a passage whose text has no embedding still is dropped (gone
    rather than found by words it no longer has)."""
    params = {"id": record_id, "segments": list(segments)}
    if not conn.execute(query("lock_passages_holding"), params).fetchall():
        return
    changed = []
    for row in conn.execute(query("passages_holding"), params).fetchall():
        body = body_of(row["texts"])
        if body != row["body"]:
            changed.append((row["n"], body))
    missing = [body for _, body in changed if body not in embeddings]
    if missing and embed is not None:
        embeddings = {**embeddings, **embed(missing)}
    dropped = 0
    for n, body in changed:
        vector = embeddings.get(body)
        dropped += vector is None
        statement = query("remake_passage" if vector is not None else "drop_passage")
        conn.execute(statement, {"id": record_id, "n": n, "body": body, "embedding": list(vector or [])})
    if dropped:
        record_log(record_id, "done", "corrected").warning(
            "record {}: {} passage(s) dropped, their corrected text not embedded here", record_id, dropped
        )
