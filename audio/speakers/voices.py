"""Voices: what a speaker sounds like, kept across recordings, and a record's speakers matched
to them.

A record's speaker is summed up by the mean of the unit-length embeddings of the windows the
clustering gave it (its centroid, unit length again) and how many seconds of speech those
windows hold. A voice is the owner's: the centroids of the speakers the owner named with its
name, one per (record, label), never audio. Its own centroid is the mean of those, each weighed
by its seconds (a speaker who talked for ten minutes says more about the voice than one who said
"yes"). A record's speakers are matched to an owner's voices by cosine similarity, one to one
(two speakers of one record are never the same voice), best pair first, and only at or above
MATCH_SIMILARITY.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from audio.speakers import assign
from audio.speakers.assign import Turn
from audio.speakers.embed import DIMENSIONS, Embeddings

# The least cosine similarity between a speaker's centroid and a voice's that names the speaker
# with the voice. Chosen by `python -m bench.voices` on its tuning set (BENCHMARKS.md names the
# speakers of each set, none of them scored): halfway between the lowest score a speaker got
# against its own voice there (0.75) and the highest against another's (0.28), to the nearest
# 0.05. A miss only leaves "Speaker N", a wrong name misleads; the scored set's lowest own-voice
# score was 0.47 (a speaker enrolled from unscripted talk, heard reading single phrases).
MATCH_SIMILARITY = 0.5
# A speaker with less speech than this is not matched: a centroid of one or two windows is
# mostly the words said, not the voice.
MIN_MATCH_SECONDS = 3.0


@dataclass(frozen=True)
class SpeakerPrint:
    """One record speaker's voice print: a unit-length centroid and the speech it was taken from."""

    centroid: np.ndarray  # (DIMENSIONS,) float32, unit length
    seconds: float

    def packed(self) -> bytes:
        return self.centroid.astype(np.float32).tobytes()

    @classmethod
    def unpacked(cls, data: bytes, seconds: float) -> SpeakerPrint:
        return cls(np.frombuffer(data, np.float32).reshape(DIMENSIONS), float(seconds))


@dataclass(frozen=True)
class Match:
    label: str
    voice_id: int
    score: float


def speaker_prints(found: Embeddings, turns: Sequence[Turn]) -> dict[str, SpeakerPrint]:
    """Each speaker's print: the windows whose middle falls in one of its turns, averaged."""
    if not len(found) or not turns:
        return {}
    speakers = _window_speakers(found.times, turns)
    shift = _window_shift(found.times)
    prints = {}
    for label in dict.fromkeys(t.speaker for t in turns):
        mine = speakers == label
        if mine.any():
            prints[label] = SpeakerPrint(_unit(found.vectors[mine].mean(axis=0)), float(mine.sum()) * shift)
    return prints


def refine(
    found: Embeddings, turns: Sequence[Turn], voices: np.ndarray, threshold: float = MATCH_SIMILARITY
) -> list[Turn]:
    """The clustering's turns re-drawn with the owner's voices (rows of `voices`, unit length)
    as anchors, before they are matched: a speaker whose windows are, in parts of at least
    MIN_MATCH_SECONDS each, at least `threshold` alike two or more different voices is split
    into those parts (the clustering took two people for one; not when those voices, or those
    parts, are alike each other: then it is one person), and speakers most alike the
    same voice (at least `threshold`) are joined, however little one of them said (it took one
    person for two, e.g. in two voice registers, or kept a short stretch apart). Windows alike
    no voice stay with their speaker. Without voices, or when nothing changes, the turns are
    returned as they are; else relabelled S1, S2… in order of first appearance."""
    if not len(found) or not turns or not len(voices):
        return list(turns)
    voices = np.asarray(voices, np.float32)
    names = _window_speakers(found.times, turns)
    shift = _window_shift(found.times)
    nearest = np.argmax(found.vectors @ voices.T, axis=1)
    groups: list[np.ndarray] = []  # window masks, one per speaker after the split
    for label in dict.fromkeys(names):
        mine = names == label
        parts, anchors = [], []
        for voice in np.unique(nearest[mine]):
            part = mine & (nearest == voice)
            if part.sum() * shift >= MIN_MATCH_SECONDS and _alike(found.vectors[part], voices[voice]) >= threshold:
                parts.append(part)
                anchors.append(voice)
        # Two people, not one heard between two voices: the voices are not alike each other
        # (one person named twice is), nor are the parts (windows picked by their nearest voice
        # lean towards it, so one person's windows can be sorted into parts that each pass;
        # they still sound like one person to each other).
        if (
            len(parts) < 2
            or _most_alike(voices[anchors]) >= threshold
            or _most_alike(np.stack([_unit(found.vectors[part].mean(axis=0)) for part in parts])) >= threshold
        ):
            groups.append(mine)
            continue
        rest = mine.copy()
        for part in parts:
            rest &= ~part
        biggest = max(range(len(parts)), key=lambda i: int(parts[i].sum()))
        parts[biggest] = parts[biggest] | rest  # what is alike no voice stays with the main part
        groups.extend(parts)
    joined: dict[int, np.ndarray] = {}  # by the voice a group is most alike, if any
    kept: list[np.ndarray] = []
    for group in groups:
        alike = voices @ _unit(found.vectors[group].mean(axis=0))
        best = int(np.argmax(alike))
        if alike[best] >= threshold:
            if best in joined:
                joined[best] |= group
                continue
            joined[best] = group
        kept.append(group)
    if len(kept) == len(set(names.tolist())) and all(len(np.unique(names[g])) == 1 for g in kept):
        return list(turns)
    labels = np.zeros(len(found), np.int64)
    for number, group in enumerate(sorted(kept, key=lambda g: int(np.argmax(g)))):
        labels[group] = number
    return assign.turns(found.times, labels)


def voice_centroid(prints: Sequence[SpeakerPrint]) -> np.ndarray:
    """A voice's centroid: its speakers' centroids weighed by their seconds."""
    weights = np.array([max(p.seconds, 1e-3) for p in prints], np.float64)
    return _unit((np.stack([p.centroid for p in prints]) * weights[:, None]).sum(axis=0))


def match(
    prints: dict[str, SpeakerPrint], voice_ids: Sequence[int], voices: np.ndarray, threshold: float = MATCH_SIMILARITY
) -> list[Match]:
    """The record's speakers matched one to one to the voices (rows of `voices`, unit length, in
    the order of `voice_ids`), best pair first, each at least `threshold` alike."""
    return match_allowed(prints, voice_ids, voices, (), threshold)


def match_allowed(
    prints: dict[str, SpeakerPrint],
    voice_ids: Sequence[int],
    voices: np.ndarray,
    rejected: Collection[tuple[str, int]],
    threshold: float = MATCH_SIMILARITY,
) -> list[Match]:
    """`match`, never pairing a speaker with a voice `rejected` names for it ((label, voice id)
    pairs: the owner said that speaker is not that voice)."""
    labels = [label for label, p in prints.items() if p.seconds >= MIN_MATCH_SECONDS]
    if not labels or not len(voice_ids):
        return []
    similarity = np.stack([prints[label].centroid for label in labels]) @ np.asarray(voices, np.float32).T
    column = {int(voice_id): j for j, voice_id in enumerate(voice_ids)}
    for label, voice_id in rejected:
        if label in labels and int(voice_id) in column:
            similarity[labels.index(label), column[int(voice_id)]] = -np.inf
    found: list[Match] = []
    while True:
        i, j = (int(k) for k in np.unravel_index(int(np.argmax(similarity)), similarity.shape))
        score = float(similarity[i, j])
        if score < threshold:
            return found
        found.append(Match(labels[i], int(voice_ids[j]), round(score, 3)))
        similarity[i, :] = -np.inf
        similarity[:, j] = -np.inf


def voice_centroids(samples: Iterable[tuple[int, bytes, float]]) -> tuple[list[int], np.ndarray]:
    """The voices' ids and centroids (rows, unit length, in the ids' order) from their samples:
    (voice id, packed centroid, seconds) rows, each voice's together. What `voice_centroid` does
    for one voice, for all at once (an owner with hundreds of voices is matched on every run)."""
    rows = list(samples)
    if not rows:
        return [], np.zeros((0, DIMENSIONS), np.float32)
    owners = np.array([row[0] for row in rows], np.int64)
    vectors = np.frombuffer(b"".join(row[1] for row in rows), np.float32).reshape(len(rows), DIMENSIONS)
    weights = np.maximum(np.array([row[2] for row in rows], np.float64), 1e-3)
    firsts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    sums = np.add.reduceat(vectors * weights[:, None], firsts, axis=0)
    norms = np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-8)
    return owners[firsts].tolist(), (sums / norms).astype(np.float32)


def _window_speakers(times: np.ndarray, turns: Sequence[Turn]) -> np.ndarray:
    """Each window's speaker: that of the turn its middle falls in (or the nearest before it)."""
    starts = np.array([t.start for t in turns])
    at = np.clip(np.searchsorted(starts, times.mean(axis=1), side="right") - 1, 0, len(turns) - 1)
    return np.array([t.speaker for t in turns])[at]


def _most_alike(rows: np.ndarray) -> float:
    """The highest similarity between two different rows (unit length)."""
    return float((rows @ rows.T - 2 * np.eye(len(rows))).max())


def _alike(vectors: np.ndarray, voice: np.ndarray) -> float:
    """How alike the mean of some windows' embeddings is to a voice."""
    return float(_unit(vectors.mean(axis=0)) @ voice)


def _window_shift(times: np.ndarray) -> float:
    """Seconds of speech one window stands for: the usual distance between window starts."""
    if len(times) < 2:
        return float(times[0, 1] - times[0, 0]) if len(times) else 0.0
    steps = np.diff(times[:, 0])
    steps = steps[steps > 0]
    return float(np.median(steps)) if len(steps) else float(times[0, 1] - times[0, 0])


def _unit(vector: np.ndarray) -> np.ndarray:
    return (vector / max(float(np.linalg.norm(vector)), 1e-8)).astype(np.float32)
