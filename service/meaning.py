"""Search by meaning in the service: a record's passages cut and embedded for the saves that
write its text, passages made again after the owner's edit, and whether this service can
answer a search by meaning at all (and if not, what enables it)."""

from __future__ import annotations

from collections.abc import Sequence

from loguru import logger

from audio import meaning
from db import Store
from domain.passages import Passage, Segment, cut, english

UNAVAILABLE_EXTRA = (
    "search by meaning needs the `meaning` extra in the service's environment: "
    "pip install -e '.[meaning]' (docs/operations.md, Search by meaning)"
)
UNAVAILABLE_OFF = "search by meaning is switched off here (TRANSCRIBER_MEANING=off)"
UNAVAILABLE_SERVER = (
    "search by meaning needs pgvector in the database: CREATE EXTENSION vector (docs/operations.md, Search by meaning)"
)
_REMAKE_ATTEMPTS = 5
ModelUnavailable = meaning.MeaningUnavailable


def unavailable(store: Store) -> str | None:
    """Why this service cannot search by meaning (a message saying what enables it), or None."""
    if not meaning.switched_on():
        return UNAVAILABLE_OFF
    if not meaning.extra_installed():
        return UNAVAILABLE_EXTRA
    if not store.meaning_ready():
        return UNAVAILABLE_SERVER
    return None


def active(store: Store) -> bool:
    """Whether passages are made here: meaning switched on, the extra installed, pgvector there."""
    return unavailable(store) is None


def embedded(passages: Sequence[Passage]) -> list[dict]:
    """The passages with their embeddings, as keep_passages takes them."""
    if not passages:
        return []
    vectors = meaning.embed([passage.body for passage in passages])
    return [
        passage.row(n, vector.tolist()) for n, (passage, vector) in enumerate(zip(passages, vectors, strict=True), 1)
    ]


def record_passages(
    store: Store, record_id: int, language: str | None, said: Sequence[Sequence[str]] | None = None
) -> list[dict] | None:
    """A record's passages for the save that writes its text (`said` None: the recognize step's,
    before speakers are known) or its speakers (`said`: each segment's speaker labels, in
    order). None when they are not made here (meaning off, or no pgvector): the recognize save
    then clears the record's passages, the diarize save keeps them. None of a text not in
    English: []."""
    if not english(language):
        return []
    if not active(store):
        return [] if said is None else None
    rows = store.passage_segments(record_id)
    labels = list(said or [])
    segments = [
        Segment(
            row["n"],
            row["start"],
            row["end"],
            row["text"],
            tuple(labels[row["n"] - 1]) if row["n"] - 1 < len(labels) else (),
        )
        for row in rows
    ]
    try:
        return embedded(cut(segments))
    except (meaning.MeaningUnavailable, OSError) as error:
        # the text is saved all the same: search by meaning is an addition, never a reason to
        # fail a record (it is found by words)
        logger.bind(record_id=record_id).warning("record {}: no passages made: {}", record_id, error)
        return [] if said is None else None


def remake_after_edit(store: Store, record_id: int, segments: Sequence[int]) -> None:
    """After the owner's edit of `segments` (places from 0): the passages that hold them made
    again from the text the search rows hold now. A passage another edit remade meanwhile is
    read again; without the model here, the passage goes (it would be found by words it no
    longer has)."""
    wanted = [segment + 1 for segment in segments]
    for _ in range(_REMAKE_ATTEMPTS):
        holding = store.passages_holding(record_id, wanted)
        if not holding:
            return
        bodies = [" ".join(text.strip() for text in row["texts"] if text and text.strip()) for row in holding]
        try:
            vectors = meaning.embed(bodies) if meaning.available() else None
        except meaning.MeaningUnavailable:
            vectors = None
        stale = 0
        for index, row in enumerate(holding):
            if row["body"] == bodies[index] and vectors is not None:
                continue
            vector = vectors[index].tolist() if vectors is not None else None
            if not store.remake_passage(record_id, row["n"], row["body"], bodies[index], vector):
                stale += 1
        if not stale:
            return
    logger.bind(record_id=record_id).warning("record {}: a passage kept changing while it was made again", record_id)


def correct(
    store: Store,
    record_id: int,
    owner_id: int | None,
    edits: Sequence[tuple[int, str]],
    *,
    by: str,
    role: str = "owner",
    words: Sequence[tuple[int, int, str]] = (),
) -> bool:
    """The owner's (or the operator's) edit of a done record's segments and single words
    (`Store.correct_segments`), then the passages that hold them made again, so search by meaning
    finds the corrected words."""
    written = store.correct_segments(record_id, owner_id, edits, by=by, role=role, words=words)
    if written:
        remake_after_edit(store, record_id, sorted({segment for segment, _ in edits} | {s for s, _, _ in words}))
    return written


def query_vector(text: str) -> str:
    """The embedding of a search's text, in pgvector's text form."""
    return meaning.as_vector(meaning.embed([text])[0])
