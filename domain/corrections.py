"""The owner's corrections of the text: how an edit times its words, and how corrections lie on
top of the recognised segments wherever the text is read.

A correction is an owner field (P3): it lives apart from the recognised text and names its
segment by place and by the segment's times as recognised. Reading puts each correction on the
segment with its times (its place first, else wherever those times now are); a correction whose
times no segment has any more (the text was recognised again and the segments moved) is
detached: kept, listed on the card, and shown as a segment of its own where its times fall.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from domain.errors import TranscriberError

# the versions of a record's text: with the owner's corrections on top, as recognised, or the
# English translation of a record asked to translate (`domain.asked`; never corrected)
CORRECTED = "corrected"
RECOGNISED = "recognised"
ENGLISH = "english"
VERSIONS = (CORRECTED, RECOGNISED, ENGLISH)

MAX_SEGMENT_TEXT = 2_000  # characters of one corrected segment: a 30 s window's text is far less


class NotDone(TranscriberError, code="not_done"):
    def __init__(self, record_id: int, stage: str):
        super().__init__(
            f"record {record_id} is at stage {stage}, not done: only a done record's text can be corrected"
        )
        self.record_id = record_id
        self.stage = stage
        self.details = {"stage": stage}


class NotTranslated(TranscriberError, code="not_translated"):
    def __init__(self, record_id: int):
        super().__init__(
            f"record {record_id} was not asked to translate, so it has no English version; upload it "
            "again with task=translate (a multilingual model) for one"
        )
        self.record_id = record_id


class NoSuchSegment(TranscriberError, code="no_such_segment"):
    def __init__(self, record_id: int, segment: int):
        super().__init__(f"record {record_id} has no segment {segment} (segments count from 0)")
        self.record_id = record_id
        self.segment = segment
        self.details = {"segment": segment}


class NoSuchWord(TranscriberError, code="no_such_word"):
    def __init__(self, record_id: int, segment: int, word: int, count: int):
        super().__init__(
            f"record {record_id}: segment {segment} has no word {word} (it has {count} timed words, counted from 0)"
        )
        self.details = {"segment": segment, "word": word}


def one_word_changed(
    words: Sequence[Mapping[str, Any]], text: str, *, record_id: int, segment: int, index: int
) -> list[dict[str, Any]]:
    """A segment's timed words (as the owner reads them: corrected, else recognised) with word
    `index` (from 0) made `text`: that word keeps its own times, and every other word its word
    and times. NoSuchWord for a place the segment has no word at."""
    shown = [dict(w) for w in words if str(w.get("word", "")).strip()]
    if not 0 <= index < len(shown):
        raise NoSuchWord(record_id, segment, index, len(shown))
    shown[index]["word"] = " " + text
    return shown


def text_of_words(words: Sequence[Mapping[str, Any]]) -> str:
    """A segment's text as its timed words say it."""
    return " ".join(str(w["word"]).strip() for w in words)


def _spread(words: Sequence[str], start: float, end: float) -> list[dict[str, Any]]:
    """`words` timed over [start, end], each a share in proportion to its length."""
    total = sum(len(word) for word in words) or 1
    timed, done = [], 0
    for word in words:
        first = start + (end - start) * done / total
        done += len(word)
        timed.append(
            {"word": " " + word, "start": round(first, 3), "end": round(start + (end - start) * done / total, 3)}
        )
    return timed


_EDGE_PUNCTUATION = re.compile(r"^\W+|\W+$")


def _plain(word: str) -> str:
    """A word as an edit compares it: without case and the punctuation around it."""
    return _EDGE_PUNCTUATION.sub("", word).casefold()


def _kept(old: Sequence[str], new: Sequence[str]) -> list[int | None]:
    """For each new word, the old word it keeps (its index) or None: the alignment of fewest
    edits (a word replaced, inserted or deleted costs one), so a misheard run replaced by as many
    words is a replacement in place, never words moved to a far copy of a repeated word. Words
    are compared without case and surrounding punctuation."""

    a, b = [_plain(w) for w in old], [_plain(w) for w in new]
    # cost[i][j]: edits turning a[i:] into b[j:]
    cost = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a), -1, -1):
        for j in range(len(b), -1, -1):
            if i == len(a) or j == len(b):
                cost[i][j] = (len(a) - i) + (len(b) - j)
            else:
                same = cost[i + 1][j + 1] + (0 if a[i] == b[j] else 1)
                cost[i][j] = min(same, cost[i + 1][j] + 1, cost[i][j + 1] + 1)
    kept: list[int | None] = []
    i = j = 0
    while j < len(b):
        if i < len(a) and cost[i][j] == cost[i + 1][j + 1] + (0 if a[i] == b[j] else 1):
            kept.append(i if a[i] == b[j] else None)
            i, j = i + 1, j + 1
        elif i < len(a) and cost[i][j] == cost[i + 1][j] + 1:
            i += 1
        else:
            kept.append(None)
            j += 1
    return kept


def retimed(recognised: Sequence[Mapping[str, Any]], start: float, end: float, text: str) -> list[dict[str, Any]]:
    """The timed words of a segment [start, end] whose text became `text`: a word the edit kept
    keeps its recognised times; a run of new words shares the span between the kept words around
    it (the segment's start and end at its edges). `recognised`: the segment's words as the
    engine gave them ({word, start, end}), possibly none."""
    old = [w for w in recognised if str(w.get("word", "")).strip()]
    new = text.split()
    kept = _kept([str(w["word"]).strip() for w in old], new)
    timed: list[dict[str, Any]] = []
    run: list[str] = []  # new words waiting for the next kept word (or the end) to be timed
    for word, place in [*zip(new, kept, strict=True), (None, None)]:
        if word is None or place is not None:
            if run:
                since = timed[-1]["end"] if timed else start
                until = old[place]["start"] if place is not None else end
                timed += _spread(run, since, max(until, since))
                run = []
            if word is not None and place is not None:
                timed.append({"word": " " + word, "start": old[place]["start"], "end": old[place]["end"]})
        else:
            run.append(word)
    return timed


def corrected(
    segments: list[dict[str, Any]], corrections: Sequence[Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[Mapping[str, Any]]]:
    """The segments with the corrections on top, and the corrections detached from them.

    A corrected segment keeps its times and whatever else it carries, with the corrected text
    and words and `corrected: true`; a detached correction becomes a segment of its own with
    `detached: true`, placed among the others by its start. Costs a pass over the segments only
    when a correction is not at its recognised place."""
    if not corrections:
        return segments, []
    shown = list(segments)
    by_times: dict[tuple[float, float], int] | None = None
    detached: list[Mapping[str, Any]] = []
    for correction in corrections:
        times = (correction["start"], correction["end"])
        place = correction["segment"]
        if not (place < len(shown) and (shown[place]["start"], shown[place]["end"]) == times):
            if by_times is None:
                by_times = {(s["start"], s["end"]): i for i, s in enumerate(segments)}
            place = by_times.get(times, -1)
        if place < 0:
            detached.append(correction)
            continue
        shown[place] = {**shown[place], "text": correction["text"], "words": correction["words"], "corrected": True}
    for correction in sorted(detached, key=lambda c: c["start"]):
        at = bisect_right([s["start"] for s in shown], correction["start"])
        shown.insert(
            at,
            {
                "start": correction["start"],
                "end": correction["end"],
                "text": correction["text"],
                "words": correction["words"],
                "detached": True,
            },
        )
    return shown, detached


def text_of(segments: Sequence[Mapping[str, Any]]) -> str:
    """The whole text as the recognize step's save assembles it: the segments' texts in order,
    joined by a space."""
    return " ".join(s.get("text") or "" for s in segments)


def corrected_transcript(row: dict[str, Any]) -> dict[str, Any]:
    """A transcript row as the store reads it (`Store.transcript`) with the owner's corrections
    on top: its segments, each with its `index` (its place, what an edit names: the pieces a
    change of speaker cuts it into keep it; a detached correction has none), its text, and
    `detached` (the corrections no segment has the times of). The row's segments are its own,
    freshly read: numbered in place, which costs a tenth of copying them."""
    corrections = row.get("corrections") or []
    for index, segment in enumerate(row.get("segments") or ()):
        segment["index"] = index
    if not corrections or row.get("segments") is None:
        return {**row, "detached": []}
    segments, detached = corrected(row["segments"], corrections)
    return {**row, "segments": segments, "transcript": text_of(segments), "detached": detached}
