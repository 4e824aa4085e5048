"""The owner's search, as the HTTP API and the command line both run it: the text
checked and shaped by `domain.search`, the hits read by the store, each hit shaped for a reader
(its record's id, title and card address, its segment's time and when its first matched word
was said, the snippet with its words marked)."""

from __future__ import annotations

from datetime import date

from db import Store
from db.search import Counted
from domain.card import links
from domain.search import MAX_COUNTED, QueryProblem, parse, said_at
from domain.speakers import speaker_name

__all__ = ["Counted", "QueryProblem", "hits"]


def hits(
    store: Store,
    owner_id: int,
    raw: str,
    *,
    limit: int,
    offset: int = 0,
    stage: str | None = None,
    topic: str | None = None,
    since: date | None = None,
    until: date | None = None,
    speaker: str | None = None,
) -> tuple[list[dict], Counted]:
    """One page of the owner's hits for the text `raw`, best first, and how many there are (up
    to MAX_COUNTED; past it, "at least" that many, and the page is the best of that many found).
    `speaker` (a label, a name the owner gave or a matched voice's) keeps that speaker's
    segments only. QueryProblem (with a message for the person who typed it) when the text is not a query."""
    asked = parse(raw)
    rows, counted = store.search(
        owner_id,
        asked.text,
        asked.prefix,
        limit=limit,
        offset=offset,
        stage=stage,
        topic=topic,
        since=since,
        until=until,
        speaker=(speaker or "").strip() or None,
        counted=MAX_COUNTED,
    )
    return [_hit(row) for row in rows], counted


def _hit(row: dict) -> dict:
    return {
        "record": {"id": row["record_id"], "title": row["title"], "card": links(row["record_id"])["self"]},
        "start": row["start_seconds"],
        "end": row["end_seconds"],
        "at": said_at(row["snippet"], row["words"], row["start_seconds"]),
        "snippet": row["snippet"],
        "rank": round(float(row["rank"]), 6),
        # who speaks in the hit, as shown everywhere (empty before speakers are found)
        "speakers": [speaker_name(label, row["names"]) for label in row["speakers"] or ()],
    }
