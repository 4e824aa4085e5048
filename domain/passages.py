"""A record's text cut into passages for search by meaning: runs of consecutive segments of
about 20 to 80 words, so that each says one thing with enough words for its meaning (a lone
segment is often a few words) and few enough that one subject does not drown in others. A
passage never crosses a change of speaker once speakers are known: "who said it" stays one
answer. Only English text is cut (the sentence model is English's); other languages are found
by their words."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

FEWEST_WORDS = 20  # a passage shorter than this takes the next segment in (same speaker)
ENOUGH_WORDS = 40  # a passage this long ends at its segment's end
MOST_WORDS = 80  # a segment that would take a passage past this starts the next one
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Segment:
    """A segment as the passages are cut from it: its place (search_rows.n, from 1), times,
    text as the owner reads it, and the labels of who speaks in it (empty: not known)."""

    n: int
    start: float
    end: float
    text: str
    speakers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Passage:
    first: int
    last: int
    start: float
    end: float
    speaker: str | None
    body: str

    def row(self, n: int, embedding: Sequence[float]) -> dict[str, object]:
        """The passage as keep_passages takes it (`n` from 1)."""
        return {
            "n": n,
            "first": self.first,
            "last": self.last,
            "start": self.start,
            "end": self.end,
            "speaker": self.speaker,
            "body": self.body,
            "embedding": list(embedding),
        }


def body_of(texts: Sequence[str | None]) -> str:
    """A passage's text from its segments' texts in order (segments without words left out)."""
    return " ".join(text.strip() for text in texts if text and text.strip())


def english(language: str | None) -> bool:
    """Whether a record in `language` is cut into passages: English, or not known yet. The
    database's in_english (0012) says the same for the records owed passages."""
    return not language or language.split("-")[0].lower() == "en"


def cut(segments: Sequence[Segment]) -> list[Passage]:
    """The passages of `segments` (in recording order); segments without words are left out."""
    runs: list[list[tuple[Segment, int]]] = []
    for segment in segments:
        words = len(_WORD.findall(segment.text))
        if not words:
            continue
        run = runs[-1] if runs else None
        if run is not None:
            said = sum(count for _, count in run)
            same_speaker = run[-1][0].speakers == segment.speakers
            if same_speaker and said < ENOUGH_WORDS and said + words <= MOST_WORDS:
                run.append((segment, words))
                continue
        runs.append([(segment, words)])
    # a short last run of a speaker joins the one before it when that keeps within the bound
    merged: list[list[tuple[Segment, int]]] = []
    for run in runs:
        before = merged[-1] if merged else None
        said = sum(count for _, count in run)
        if (
            before is not None
            and said < FEWEST_WORDS
            and before[-1][0].speakers == run[0][0].speakers
            and sum(count for _, count in before) + said <= MOST_WORDS
        ):
            before.extend(run)
        else:
            merged.append(run)
    return [_passage([segment for segment, _ in run]) for run in merged]


def _passage(run: list[Segment]) -> Passage:
    labels = run[0].speakers
    return Passage(
        first=run[0].n,
        last=run[-1].n,
        start=run[0].start,
        end=max(segment.end for segment in run),
        speaker=labels[0] if len(labels) == 1 else None,
        body=body_of([segment.text for segment in run]),
    )
