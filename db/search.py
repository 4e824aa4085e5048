"""The owner's search over the archive; the statement is in `queries/search.sql`."""

from __future__ import annotations

from datetime import date
from typing import NamedTuple

from psycopg.rows import DictRow

from db.database import Database
from db.queries import query


class Counted(NamedTuple):
    """How many hits there are: exact, or (`capped`) at least `total`."""

    total: int
    capped: bool


class Search:
    """Full-text search; a part of `db.store.Store`."""

    db: Database

    def search(
        self,
        owner_id: int,
        text: str,
        prefix: str | None,
        *,
        limit: int,
        offset: int,
        stage: str | None = None,
        topic: str | None = None,
        since: date | None = None,
        until: date | None = None,
        speaker: str | None = None,
        counted: int,
    ) -> tuple[list[DictRow], Counted]:
        """One page of the owner's hits, best first, and how many hits there are, counted up to
        `counted`: when more match, the count says "at least `counted`" and the page is the best
        of the first `counted` found. `text` goes to websearch_to_tsquery; `prefix` is the last
        word typed (see domain.search); `since`/`until` bound the record's creation date (both
        included); `speaker` (a label, S1, or the name the owner gave it) keeps the segments
        where that speaker speaks."""
        params = {
            "owner_id": owner_id,
            "text": text,
            "prefix": prefix,
            "limit": limit,
            "offset": offset,
            "stage": stage,
            "topic": topic,
            "since": since,
            "until": until,
            "speaker": speaker,
            "candidates": counted,
        }
        with self.db.connection() as conn:
            # planned for its parameters each time (never a prepared, generic plan): which way to
            # find the owner's rows depends on them, and the generic plan is several times slower
            rows = conn.execute(query("search_page"), params, prepare=False).fetchall()
        found = rows[0]["total"] if rows else 0
        return [row for row in rows if row["record_id"] is not None], Counted(min(found, counted), found > counted)
