"""The owner's search, as the HTTP API and the command line both run it: the text
checked and shaped by `domain.search`, the hits read by the store, each hit shaped for a reader
(its record's id, title and card address, its segment's time and when its first matched word
was said, the snippet with its words marked). Three modes: by words (full-text search), by
meaning (the passages nearest the query's embedding, `service.meaning`) and both, the two
rankings fused by reciprocal rank; each hit says how it `matched`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from db import Store
from db.search import Counted
from domain.card import links
from domain.errors import TranscriberError
from domain.search import MAX_COUNTED, QueryProblem, parse, said_at
from domain.speakers import speaker_name
from service import meaning

__all__ = ["MODES", "Counted", "Found", "MeaningUnavailable", "QueryProblem", "hits", "search"]

MODES = ("words", "meaning", "both")
# each ranking's best, fused in `both` (reciprocal rank fusion, its usual constant): a page of
# a search by meaning or both is the best of these
FUSED_FROM = 50
FUSION_K = 60
# a passage less like the query than this is no answer to it (unrelated English text scores
# about 0 to 0.15 with this model; a paraphrase of the question, 0.4 and more)
MEANING_FLOOR = 0.2
SNIPPET_WORDS = 40


class MeaningUnavailable(TranscriberError, code="meaning_unavailable"):
    """Search by meaning cannot run here; the message says what enables it."""


@dataclass
class Found:
    """A page of hits, how many there are, and notes on how the search was answered (meaning
    unavailable and words used instead, records only words find)."""

    items: list[dict]
    counted: Counted
    notes: list[str] = field(default_factory=list)


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


def search(
    store: Store,
    owner_id: int,
    raw: str,
    *,
    mode: str = "both",
    limit: int,
    offset: int = 0,
    **filters,
) -> Found:
    """One page of the owner's hits for `raw` in `mode` (words, meaning or both), best first.
    `filters` as `hits`'. QueryProblem when the text is not a query; MeaningUnavailable for
    `meaning` where it cannot run (`both` then answers by words, saying so in its notes)."""
    if mode == "words":
        items, counted = hits(store, owner_id, raw, limit=limit, offset=offset, **filters)
        return Found(items, counted)
    asked = parse(raw)
    why = meaning.unavailable(store)
    if why is not None:
        if mode == "meaning":
            raise MeaningUnavailable(why)
        items, counted = hits(store, owner_id, raw, limit=limit, offset=offset, **filters)
        return Found(items, counted, [f"found by words only: {why}"])
    try:
        vector = meaning.query_vector(asked.text)
    except meaning.ModelUnavailable as error:  # the weights could not be fetched
        if mode == "meaning":
            raise MeaningUnavailable(str(error)) from None
        items, counted = hits(store, owner_id, raw, limit=limit, offset=offset, **filters)
        return Found(items, counted, [f"found by words only: {error}"])
    notes = []
    others = store.owner_not_english(owner_id)
    if others:
        notes.append(f"{others} record(s) not in English are found by their words only")
    shown = {**filters, "speaker": (filters.get("speaker") or "").strip() or None}
    rows = store.nearest_passages(owner_id, vector, limit=FUSED_FROM, **shown)
    by_meaning = [_passage_hit(row) for row in rows if row["score"] >= MEANING_FLOOR]
    if mode == "meaning":
        ranked = by_meaning
    else:
        by_words, _ = hits(store, owner_id, raw, limit=FUSED_FROM, offset=0, **filters)
        ranked = fused(by_words, by_meaning)
    return Found(ranked[offset : offset + limit], Counted(len(ranked), False), notes)


def fused(by_words: list[dict], by_meaning: list[dict]) -> list[dict]:
    """The two rankings as one, by reciprocal rank: a hit's score is the sum over the rankings
    that hold it of 1 / (60 + its place). A segment found by words inside a passage found by
    meaning is one hit (the segment's, with its marked words and the second its first matched
    word was said); `matched` says which rankings found it."""
    scored: list[tuple[float, int, dict]] = []
    taken: set[int] = set()
    for place, hit in enumerate(by_words, 1):
        score = 1 / (FUSION_K + place)
        matched = ["words"]
        for index, passage in enumerate(by_meaning):
            if index not in taken and _inside(hit, passage):
                taken.add(index)
                score += 1 / (FUSION_K + index + 1)
                matched.append("meaning")
                break
        scored.append((score, len(scored), {**hit, "matched": matched, "rank": round(score, 6)}))
    for index, passage in enumerate(by_meaning):
        if index not in taken:
            score = 1 / (FUSION_K + index + 1)
            scored.append((score, len(scored), {**passage, "rank": round(score, 6)}))
    return [hit for _, _, hit in sorted(scored, key=lambda item: (-item[0], item[1]))]


def _inside(hit: dict, passage: dict) -> bool:
    return (
        hit["record"]["id"] == passage["record"]["id"]
        and hit["start"] is not None
        and passage["start"] <= hit["start"] < max(passage["end"], passage["start"] + 1e-6)
    )


def _passage_hit(row: dict) -> dict:
    words = row["body"].split()
    snippet = " ".join(words[:SNIPPET_WORDS]) + (" …" if len(words) > SNIPPET_WORDS else "")
    return {
        "record": {"id": row["record_id"], "title": row["title"], "card": links(row["record_id"])["self"]},
        "start": row["start_seconds"],
        "end": row["end_seconds"],
        "at": row["start_seconds"],
        "snippet": snippet,
        "rank": round(float(row["score"]), 6),
        "speakers": [speaker_name(row["speaker"], row["names"])] if row["speaker"] else [],
        "matched": ["meaning"],
    }


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
        "matched": ["words"],
    }
