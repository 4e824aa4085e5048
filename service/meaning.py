"""Search by meaning in the service: a record's passages cut and embedded for the saves that
write its text, passages made again in the owner's edit, and whether this service can
answer a search by meaning at all (and if not, what enables it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loguru import logger

from audio import meaning
from db import Store
from domain.errors import TranscriberError
from domain.passages import Passage, Segment, body_of, cut, english

UNAVAILABLE_EXTRA = (
    "search by meaning needs the `meaning` extra in the service's environment: "
    "pip install -e '.[meaning]' (docs/operations.md, Search by meaning)"
)
UNAVAILABLE_OFF = "search by meaning is switched off here (TRANSCRIBER_MEANING=off)"
UNAVAILABLE_SERVER = (
    "search by meaning needs pgvector in the database: CREATE EXTENSION vector (docs/operations.md, Search by meaning)"
)
# records the backfill gives passages at a time (each is embedded, some 0.1 CPU-s per passage)
BACKFILL_BATCH = 20
_EDIT_ATTEMPTS = 5  # an edit undone for passages another edit changed meanwhile, at most
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
    segments = _segments(store, record_id, said or [])
    try:
        return embedded(cut(segments))
    except (meaning.MeaningUnavailable, OSError) as error:
        # the text is saved all the same: search by meaning is an addition, never a reason to
        # fail a record (it is found by words)
        logger.bind(record_id=record_id).warning("record {}: no passages made: {}", record_id, error)
        return [] if said is None else None


class _Unembedded(TranscriberError, code="unembedded"):
    """The passages an edit leaves hold texts not embedded before its transaction: the edit is
    undone, to be made again once they are (caught here, never answered to anyone)."""

    def __init__(self, bodies: list[str]) -> None:
        super().__init__(f"{len(bodies)} passage(s) to embed before the edit")
        self.bodies = bodies


def _undo(bodies: list[str]) -> dict[str, list[float]]:
    raise _Unembedded(bodies)


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
    (`Store.correct_segments`), the passages that hold them made again in the same transaction,
    so search by meaning finds the corrected words and never the words they replaced. Their
    texts are embedded before the transaction, as the saves' are: foreseen from the segments the
    edit replaces; when the edit leaves others (a word edit, or another edit of the passage
    committed meanwhile) it is undone, those are embedded, and it is made again. The last of
    `_EDIT_ATTEMPTS` embeds what it lacks inside the transaction, the passages locked, so an
    edit never fails for another's. Without the model here, a passage whose text changed goes."""
    embeddings: dict[str, list[float]] = {}
    model = meaning.available() and _embed_into(embeddings, _foreseen(store, record_id, edits))
    for attempt in range(_EDIT_ATTEMPTS):
        last = attempt == _EDIT_ATTEMPTS - 1
        try:
            return store.correct_segments(
                record_id,
                owner_id,
                edits,
                by=by,
                role=role,
                words=words,
                embeddings=embeddings,
                embed=None if not model else _embedded_now if last else _undo,
            )
        except _Unembedded as missing:
            model = _embed_into(embeddings, missing.bodies)
    raise AssertionError("the last attempt is never undone")  # pragma: no cover


def _embedded_now(bodies: list[str]) -> dict[str, list[float]]:
    embeddings: dict[str, list[float]] = {}
    _embed_into(embeddings, bodies)
    return embeddings


def _foreseen(store: Store, record_id: int, edits: Sequence[tuple[int, str]]) -> list[str]:
    """The texts of the passages an edit of whole segments leaves, as the text is now."""
    texts = {segment + 1: text for segment, text in edits}
    if not texts:
        return []
    holding = store.passages_holding(record_id, sorted(texts))
    return [
        body_of([texts.get(n, text) for n, text in zip(row["segments"], row["texts"], strict=True)]) for row in holding
    ]


def _embed_into(embeddings: dict[str, list[float]], bodies: Sequence[str]) -> bool:
    """`bodies` embedded into `embeddings`; False when the model cannot be had here."""
    fresh = [body for body in dict.fromkeys(bodies) if body not in embeddings]
    if not fresh:
        return True
    try:
        vectors = meaning.embed(fresh)
    except (meaning.MeaningUnavailable, OSError):
        return False
    embeddings.update((body, vector.tolist()) for body, vector in zip(fresh, vectors, strict=True))
    return True


@dataclass(frozen=True)
class Backfilled:
    """One backfill batch: how many records gained passages, how many changed while theirs were
    made (left to the next pass), and the id to go on after (None: no record left past it)."""

    records: int
    changed: int
    after: int | None


def backfill(store: Store, *, after: int = 0, limit: int | None = None) -> Backfilled:
    """Passages for up to `limit` done records owed them (`limit` None: BACKFILL_BATCH), by id
    past `after`: done in English with words while search by meaning was not active here, or an
    edit dropped a passage it could not embed. Each is cut and embedded as its recognize and
    diarize saves would have (the owner's corrections and its speakers in), before and outside
    the write, which is fenced: written only if the record's segments still hold what was
    embedded (an edit meanwhile leaves the record to the next pass). Nothing where search by
    meaning is not active. Logs record ids, never text."""
    if not active(store):
        return Backfilled(0, 0, None)
    limit = limit or BACKFILL_BATCH
    candidates = store.passages_missing(after, limit)
    made = changed = 0
    for record_id in candidates:
        segments = _segments(store, record_id, store.segment_speakers(record_id))
        try:
            passages = embedded(cut(segments))
        except (meaning.MeaningUnavailable, OSError) as error:
            logger.bind(record_id=record_id).warning("record {}: no passages made: {}", record_id, error)
            return Backfilled(made, changed, None)
        log = logger.bind(record_id=record_id)
        if store.backfill_passages(record_id, [(segment.text, segment.speakers) for segment in segments], passages):
            made += 1
            log.info("record {}: {} passage(s) made for search by meaning", record_id, len(passages))
        else:
            changed += 1
            log.info("record {}: its text changed while its passages were made; left to the next pass", record_id)
    return Backfilled(made, changed, candidates[-1] if len(candidates) == limit else None)


def _segments(store: Store, record_id: int, said: Sequence[Sequence[str]]) -> list[Segment]:
    """The record's segments as its passages are cut from them: place, times, text (the owner's
    corrections in) and who speaks in each (`said`, in order; past its end: not known)."""
    return [
        Segment(
            row["n"],
            row["start"],
            row["end"],
            row["text"],
            tuple(said[row["n"] - 1]) if row["n"] - 1 < len(said) else (),
        )
        for row in store.passage_segments(record_id)
    ]


def query_vector(text: str) -> str:
    """The embedding of a search's text, in pgvector's text form."""
    return meaning.as_vector(meaning.embed([text])[0])
