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

from audio.speakers.assign import Turn
from audio.speakers.embed import DIMENSIONS, Embeddings

# The least cosine similarity between a speaker's centroid and a voice's that names the speaker
# with the voice. Chosen by `python -m bench.voices` on its tuning set (BENCHMARKS.md names the
# speakers of each set) for few wrong names; a miss only leaves "Speaker N", a wrong name misleads.
MATCH_SIMILARITY = 0.6
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
    middles = found.times.mean(axis=1)
    starts = np.array([t.start for t in turns])
    at = np.clip(np.searchsorted(starts, middles, side="right") - 1, 0, len(turns) - 1)
    speakers = np.array([t.speaker for t in turns])[at]
    shift = _window_shift(found.times)
    prints = {}
    for label in dict.fromkeys(t.speaker for t in turns):
        mine = speakers == label
        if mine.any():
            prints[label] = SpeakerPrint(_unit(found.vectors[mine].mean(axis=0)), float(mine.sum()) * shift)
    return prints


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
    (voice id, packed centroid, seconds) rows, each voice's together."""
    ids: list[int] = []
    grouped: list[list[SpeakerPrint]] = []
    for voice_id, packed, seconds in samples:
        if not ids or ids[-1] != voice_id:
            ids.append(voice_id)
            grouped.append([])
        grouped[-1].append(SpeakerPrint.unpacked(packed, seconds))
    if not ids:
        return [], np.zeros((0, DIMENSIONS), np.float32)
    return ids, np.stack([voice_centroid(prints) for prints in grouped])


def _window_shift(times: np.ndarray) -> float:
    """Seconds of speech one window stands for: the usual distance between window starts."""
    if len(times) < 2:
        return float(times[0, 1] - times[0, 0]) if len(times) else 0.0
    steps = np.diff(times[:, 0])
    steps = steps[steps > 0]
    return float(np.median(steps)) if len(steps) else float(times[0, 1] - times[0, 0])


def _unit(vector: np.ndarray) -> np.ndarray:
    return (vector / max(float(np.linalg.norm(vector)), 1e-8)).astype(np.float32)
