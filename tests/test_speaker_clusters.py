"""Speaker clustering and word assignment (numpy only: these run without the extra)."""
from __future__ import annotations

import numpy as np

from audio.speakers.assign import Turn, assign, turns
from audio.speakers import cluster as clusters
from audio.speakers.cluster import cluster


def voices(count: int, per_voice: list[int], noise: float = 0.6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors scattered around `count` random directions in 192 dimensions."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(count, 192))
    truth = np.concatenate([np.full(n, i) for i, n in enumerate(per_voice)])
    vectors = centres[truth] / np.sqrt(192) * 3 + rng.normal(size=(len(truth), 192)) * noise / np.sqrt(192) * 3
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32), truth


def agree(labels: np.ndarray, truth: np.ndarray) -> bool:
    """The labels are the truth up to renaming."""
    return len(set(zip(labels.tolist(), truth.tolist()))) == len(set(truth.tolist())) == len(set(labels.tolist()))


def test_the_number_of_voices_is_found_few_or_many_windows(monkeypatch):
    """Few windows (agglomeration), many (spectral) and more than MAX_POINTS (runs
    of windows clustered, then each window labelled) each find the voices."""
    monkeypatch.setattr(clusters, "MAX_POINTS", 200)  # the long-recording path, on a small scale
    for per_voice in ([6, 4], [60, 30, 45], [300, 150]):
        vectors, truth = voices(len(per_voice), per_voice)
        order = np.random.default_rng(1).permutation(len(truth)) if len(truth) < 200 else np.arange(len(truth))
        labels = cluster(vectors[order], None)
        assert agree(labels, truth[order]), per_voice


def test_the_owner_can_fix_the_number_of_speakers():
    """An upload may give the number of speakers (`speakers` = a number): a given count is kept."""
    vectors, _ = voices(3, [20, 20, 20])
    assert len(set(cluster(vectors, 2).tolist())) == 2
    assert set(cluster(vectors, 1).tolist()) == {0}


def test_a_segment_is_split_where_its_speaker_changes():
    """Each word gets the turn it overlaps most, a segment never spans two
    speakers, and a word in a pause gets the nearest turn."""
    found = turns(np.array([[0.0, 1.5], [0.75, 2.25], [1.5, 3.0]]), np.array([0, 0, 1]))
    assert found == [Turn(0.0, 1.875, "S1"), Turn(1.875, 3.0, "S2")]
    segment = {"start": 0.0, "end": 3.5, "text": "one two three four",
               "words": [{"word": "one", "start": 0.1, "end": 0.5}, {"word": "two", "start": 1.0, "end": 1.7},
                         {"word": "three", "start": 1.8, "end": 2.6}, {"word": "four", "start": 3.1, "end": 3.4}]}
    pieces = assign([segment], found)
    assert [(p["speaker"], p["text"], p["start"], p["end"]) for p in pieces] == [
        ("S1", "one two", 0.1, 1.7), ("S2", "three four", 1.8, 3.4)]


def test_a_briefly_heard_voice_is_kept_and_a_few_odd_windows_join_their_speaker():
    """Speakers with little speech are kept and one speaker is counted once: two windows of a
    voice unlike every other stay a speaker of their own, while four windows only partly like a
    speaker (as a phrase said in another voice register is) join that speaker."""
    vectors, truth = voices(3, [30, 30, 2])
    rng = np.random.default_rng(5)
    first = vectors[truth == 0].mean(0)
    first /= np.linalg.norm(first)
    register = rng.normal(size=192)
    register /= np.linalg.norm(register)
    odd = 0.27 * first + register + rng.normal(size=(4, 192)) * 0.1 / np.sqrt(192) * 3
    odd = (odd / np.linalg.norm(odd, axis=1, keepdims=True)).astype(np.float32)
    labels = cluster(np.concatenate([vectors, odd]))
    assert agree(labels, np.concatenate([truth, np.zeros(4, np.int64)]))
