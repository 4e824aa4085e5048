"""Speaker turns from labelled windows, and each transcript word's speaker.

Neighbouring windows overlap (a window every SHIFT_SECONDS, each WINDOW_SECONDS long), so the
time two of them share is split at its middle. A word gets the speaker whose turns overlap it
most (the nearest turn when it falls in a pause), and is cut at that speaker's turn where it runs
far past it; a transcript segment whose words change speaker is split there, so no segment, cue
or paragraph ever spans two speakers.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

# How far a word may run out of its speaker's turn and keep its time: a turn's edge is only as
# sure as the windows it is found in (one every SHIFT_SECONDS, audio.speakers.embed), and the
# recognizer's word times are surer within that.
TURN_SLACK_SECONDS = 1.0


@dataclass(frozen=True)
class Turn:
    start: float
    end: float
    speaker: str


def label(index: int) -> str:
    """A speaker's stable machine label: S1, S2, … in order of first appearance."""
    return f"S{index + 1}"


def turns(times: np.ndarray, labels: np.ndarray) -> list[Turn]:
    """Speaker turns from windows (start/end rows, sorted by start) and their labels, in plain
    Python floats (a turn is saved as JSON, which knows no numpy scalar)."""
    rows = times.tolist()
    spans: list[list] = []
    for i, (start, end) in enumerate(rows):
        if i + 1 < len(rows) and rows[i + 1][0] < end:
            end = (rows[i + 1][0] + end) / 2
        if spans and spans[-1][1] > start:
            start = spans[-1][1]
        speaker = label(int(labels[i]))
        if spans and spans[-1][2] == speaker and start - spans[-1][1] < 1e-6:
            spans[-1][1] = end
        else:
            spans.append([start, end, speaker])
    return [Turn(round(a, 3), round(b, 3), s) for a, b, s in spans if b > a]


def speaker_of(start: float, end: float, turns_: list[Turn], starts: list[float] | None = None) -> str | None:
    """The speaker whose turns overlap [start, end] most; the nearest turn's in a pause.
    `turns_` are in time order and do not overlap (as `turns` makes them), so only the turns
    around the word are looked at."""
    if not turns_:
        return None
    starts = starts if starts is not None else [t.start for t in turns_]
    overlap: dict[str, float] = {}
    for turn, shared in _overlapping(start, end, turns_, starts):
        overlap[turn.speaker] = overlap.get(turn.speaker, 0.0) + shared
    if overlap:
        return max(overlap, key=overlap.__getitem__)
    after = bisect.bisect_left(starts, end)
    middle = (start + end) / 2
    near = turns_[max(after - 1, 0) : after + 1]
    return min(near, key=lambda t: min(abs(middle - t.start), abs(middle - t.end))).speaker


def _overlapping(start: float, end: float, turns_: list[Turn], starts: list[float]) -> list[tuple[Turn, float]]:
    """The turns that share time with [start, end], latest first, each with the time shared."""
    found, i = [], bisect.bisect_left(starts, end) - 1
    while i >= 0 and turns_[i].end > start:
        shared = min(end, turns_[i].end) - max(start, turns_[i].start)
        if shared > 0:
            found.append((turns_[i], shared))
        i -= 1
    return found


def _in_turn(word: dict, speaker: str | None, turns_: list[Turn], starts: list[float]) -> dict:
    """The word with `speaker`; where it runs more than TURN_SLACK_SECONDS out of the turn of that
    speaker it shares most time with (the recognizer stretched it across a change of speaker), cut
    at that turn's edge. A word in a pause keeps its time."""
    overlapping = _overlapping(word["start"], word["end"], turns_, starts)
    mine = [(turn, time) for turn, time in overlapping if turn.speaker == speaker]
    if not mine:
        return {**word, "speaker": speaker}
    turn, _ = max(mine, key=lambda pair: pair[1])
    start = word["start"] if turn.start - word["start"] <= TURN_SLACK_SECONDS else turn.start
    end = word["end"] if word["end"] - turn.end <= TURN_SLACK_SECONDS else turn.end
    return {**word, "start": start, "end": end, "speaker": speaker}


def assign(segments: list[dict], turns_: list[Turn]) -> list[dict]:
    """The segments with `speaker` on each segment and word, split where the speaker changes."""
    out, starts = [], [t.start for t in turns_]
    for segment in segments:
        words = segment.get("words") or []
        if not words:
            out.append({**segment, "speaker": speaker_of(segment["start"], segment["end"], turns_, starts)})
            continue
        pieces: list[list[dict]] = []
        for word in words:
            word = _in_turn(word, speaker_of(word["start"], word["end"], turns_, starts), turns_, starts)
            if pieces and pieces[-1][-1]["speaker"] == word["speaker"]:
                pieces[-1].append(word)
            else:
                pieces.append([word])
        if len(pieces) == 1:
            out.append({**segment, "words": pieces[0], "speaker": pieces[0][0]["speaker"]})
            continue
        for piece in pieces:
            out.append(
                {
                    **segment,
                    "start": piece[0]["start"],
                    "end": piece[-1]["end"],
                    "text": " ".join(w["word"] for w in piece),
                    "words": piece,
                    "speaker": piece[0]["speaker"],
                }
            )
    return out


def segment_speakers(segments: list[dict], turns_: list[Turn]) -> list[list[str]]:
    """Who speaks in each segment, in the segments' order, as `assign` labels its words (a
    segment without words: by its own span); what a segment's search row keeps, so a search can
    keep one speaker's words."""
    starts = [t.start for t in turns_]
    said = []
    for segment in segments:
        spoken = (speaker_of(span["start"], span["end"], turns_, starts) for span in segment.get("words") or [segment])
        found = {speaker for speaker in spoken if speaker is not None}
        said.append(sorted(found, key=lambda speaker: int(speaker[1:])))
    return said
