"""The matching rules of audio/speakers/voices.py on real speech (tests/data): a voice enrolled
from one recording is matched on another recording of the same person, a person never enrolled
is not, and `refine` splits a speaker that is two enrolled voices and joins two speakers that are
one. The embeddings are the CAM++ model's, computed once for the module."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from audio.decode import SAMPLE_RATE, pcm16k
from audio.speakers.assign import Turn
from audio.speakers.diarize import pcm_embeddings, speaker_turns
from audio.speakers.embed import SHIFT_SECONDS
from audio.speakers.regions import speech_regions
from audio.speakers.voices import (
    MATCH_SIMILARITY,
    MIN_MATCH_SECONDS,
    match,
    match_allowed,
    refine,
    speaker_prints,
    voice_centroids,
)
from conftest import ROOT

DATA = ROOT / "tests" / "data"
GAP = np.zeros(SAMPLE_RATE, np.int16)  # a second of silence between two people


def samples(path: Path) -> np.ndarray:
    return np.frombuffer(b"".join(pcm16k(path)), np.int16)


def embedded(*parts: np.ndarray):
    """The embeddings of `parts` said one after another, a second apart, and where each starts."""
    starts, joined, at = [], [], 0
    for part in parts:
        starts.append(at / SAMPLE_RATE)
        joined += [part, GAP]
        at += len(part) + len(GAP)
    return pcm_embeddings([np.concatenate(joined).tobytes()]), starts


@pytest.fixture(scope="module")
def speech():
    """Two people enrolled (the LibriVox reader from one excerpt, the MFA speaker from one
    recording), and a conversation of other recordings: the reader's other excerpt, the MFA
    speaker's other recording, and a person never enrolled."""
    reader = samples(DATA / "librivox_reader.ogg")
    regions = speech_regions(reader.astype(np.float32) / 32768)
    _, cut, _ = max((b[0] - a[1], (a[1] + b[0]) / 2, i) for i, (a, b) in enumerate(itertools.pairwise(regions)))
    first, second = reader[: int(cut * SAMPLE_RATE)], reader[int(cut * SAMPLE_RATE) :]
    rows = []
    for voice_id, recording in ((1, first), (2, samples(DATA / "mfa_uhuh.flac"))):
        found, _ = embedded(recording)
        rows += [(voice_id, p.packed(), p.seconds) for p in speaker_prints(found, speaker_turns(found)).values()]
    voice_ids, voices = voice_centroids(rows)
    found, starts = embedded(second, samples(DATA / "mfa_words.flac"), samples(DATA / "ipa_us.flac"))
    return voice_ids, voices, found, starts


def who(found, turns: list[Turn], start: float, end: float) -> set[str]:
    """The speakers of the windows whose middle lies in [start, end)."""
    middles = found.times.mean(axis=1)
    inside = (middles >= start) & (middles < end)
    return {t.speaker for t in turns for m in middles[inside] if t.start <= m < t.end}


def test_an_enrolled_voice_is_named_on_another_recording_and_a_stranger_is_not(speech):
    voice_ids, voices, found, (reader, mfa, stranger) = speech
    turns = speaker_turns(found)
    named = {m.label: m.voice_id for m in match(speaker_prints(found, turns), voice_ids, voices)}
    (reader_label,) = who(found, turns, reader, mfa)
    (mfa_label,) = who(found, turns, mfa, stranger)
    stranger_labels = who(found, turns, stranger, float("inf"))
    assert named[reader_label] == 1 and named[mfa_label] == 2
    assert not stranger_labels & set(named), "a person never enrolled got a voice's name"


def test_a_stranger_is_below_the_threshold_and_a_rejected_voice_is_never_matched(speech):
    """The stranger's speech is enough to be matched (so the miss is the threshold's doing); a
    voice the owner rejected for a speaker is not matched to it, the other speakers keep theirs."""
    voice_ids, voices, found, (_, mfa, stranger) = speech
    by_person = [Turn(float(found.times[0, 0]), mfa - 0.5, "S1"), Turn(mfa - 0.5, stranger - 0.5, "S2"),
                 Turn(stranger - 0.5, 1e9, "S3")]
    prints = speaker_prints(found, by_person)
    assert prints["S3"].seconds >= MIN_MATCH_SECONDS
    assert float(np.max(voices @ prints["S3"].centroid)) < MATCH_SIMILARITY
    assert {m.label: m.voice_id for m in match(prints, voice_ids, voices)} == {"S1": 1, "S2": 2}
    kept = match_allowed(prints, voice_ids, voices, {("S1", 1)})
    assert {m.label: m.voice_id for m in kept} == {"S2": 2}


def test_refine_splits_a_speaker_who_is_two_enrolled_voices(speech):
    """The clustering took the reader and the MFA speaker for one person: refined, their windows
    are two speakers, each matched to its own voice."""
    voice_ids, voices, found, (reader, mfa, stranger) = speech
    one = [Turn(float(found.times[0, 0]), stranger - 0.5, "S1"), Turn(stranger - 0.5, 1e9, "S2")]
    refined = refine(found, one, voices)
    (reader_label,) = who(found, refined, reader, mfa)
    (mfa_label,) = who(found, refined, mfa, stranger)
    assert reader_label != mfa_label
    named = {m.label: m.voice_id for m in match(speaker_prints(found, refined), voice_ids, voices)}
    assert named[reader_label] == 1 and named[mfa_label] == 2
    assert who(found, refined, stranger, float("inf")).isdisjoint({reader_label, mfa_label})


def test_refine_joins_two_speakers_who_are_one_enrolled_voice(speech):
    """The clustering cut the reader's excerpt in two speakers: refined, it is one again, and the
    stranger stays a speaker of its own (alike no voice, it is neither joined nor named)."""
    voice_ids, voices, found, (reader, mfa, stranger) = speech
    middle = (reader + mfa) / 2
    cut = [Turn(float(found.times[0, 0]), middle, "S1"), Turn(middle, mfa - 0.5, "S2"),
           Turn(mfa - 0.5, stranger - 0.5, "S3"), Turn(stranger - 0.5, 1e9, "S4")]
    assert len(who(found, cut, reader, mfa)) == 2
    refined = refine(found, cut, voices)
    (reader_label,) = who(found, refined, reader, mfa)
    (stranger_label,) = who(found, refined, stranger, float("inf"))
    assert stranger_label not in who(found, refined, reader, stranger)
    named = {m.label: m.voice_id for m in match(speaker_prints(found, refined), voice_ids, voices)}
    assert named[reader_label] == 1 and stranger_label not in named


def test_refine_changes_nothing_without_voices_or_where_the_clustering_was_right(speech):
    _, voices, found, _ = speech
    turns = speaker_turns(found)
    assert refine(found, turns, voices[:0]) == turns
    assert len(who(found, turns, 0, 1e9)) == 3  # the three people told apart
    assert refine(found, turns, voices) == turns


def test_refine_never_splits_one_person_named_twice(speech):
    """The owner named the reader twice, as two voices never merged (one from each excerpt): the
    reader's windows fall nearer one voice in one excerpt and nearer the other in the other, and
    the reader stays one speaker all the same."""
    found, _ = embedded(samples(DATA / "librivox_reader.ogg"))
    one = [Turn(float(found.times[0, 0]), 1e9, "S1")]
    middle = float(found.times[len(found) // 2, 0])
    halves = speaker_prints(found, [Turn(float(found.times[0, 0]), middle, "A"), Turn(middle, 1e9, "B")])
    twice = np.stack([halves["A"].centroid, halves["B"].centroid])
    assert float(twice[0] @ twice[1]) >= MATCH_SIMILARITY  # alike: one person
    nearest = np.argmax(found.vectors @ twice.T, axis=1)
    assert min(np.sum(nearest == 0), np.sum(nearest == 1)) * SHIFT_SECONDS >= MIN_MATCH_SECONDS  # one to refuse
    assert {t.speaker for t in refine(found, one, twice)} == {"S1"}


def test_refine_never_splits_one_person_between_two_unlike_voices(speech):
    """Two voices unlike each other, each fairly alike the reader from another side (relatives,
    say): the reader's windows, sorted by their nearest voice, make two parts that each pass as
    that voice, yet the parts sound like one person to each other, and the reader stays one."""
    found, _ = embedded(samples(DATA / "librivox_reader.ogg"))
    centre = found.vectors.mean(axis=0)
    centre /= np.linalg.norm(centre)
    side = np.linalg.svd(found.vectors - found.vectors.mean(axis=0), full_matrices=False)[2][0]
    side -= (side @ centre) * centre
    side /= np.linalg.norm(side)
    two = np.stack([0.7 * centre + 0.714 * side, 0.7 * centre - 0.714 * side]).astype(np.float32)
    two /= np.linalg.norm(two, axis=1, keepdims=True)
    assert float(two[0] @ two[1]) < MATCH_SIMILARITY
    nearest = np.argmax(found.vectors @ two.T, axis=1)
    for voice in (0, 1):  # each part long enough and alike its voice: a split the other rules allow
        part = found.vectors[nearest == voice]
        assert len(part) * SHIFT_SECONDS >= MIN_MATCH_SECONDS
        assert float(part.mean(axis=0) / np.linalg.norm(part.mean(axis=0)) @ two[voice]) >= MATCH_SIMILARITY
    one = [Turn(float(found.times[0, 0]), 1e9, "S1")]
    assert {t.speaker for t in refine(found, one, two)} == {"S1"}
