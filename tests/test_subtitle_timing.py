"""Subtitles follow the words: a word's time is where a voice says it, and a cue's time is its
words' time, one speaker at a time."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from audio.decode import SAMPLE_RATE, pcm16k
from audio.formats import cues, render
from audio.recognized import UNVOICED_WORD_SECONDS, clamp_to_voice, words_on_voice
from audio.speakers.assign import Turn, assign
from audio.windows import windows
from conftest import ROOT

READER = ROOT / "tests" / "data" / "librivox_reader.ogg"  # a LibriVox reader, female
TALKER = ROOT / "tests" / "data" / "mfa_uhuh.flac"  # the MFA test speaker, male
JFK = ROOT / "transcriber" / "samples" / "hello.ogg"  # the bundled sample
GAP_SECONDS = 5.0
# Silero's voice spans reach 0.4 s past the voice (faster-whisper's speech padding): a word may
# keep that much of a silence, not more.
MOST_SILENCE_IN_A_WORD = 0.5


def _pcm(path: Path) -> np.ndarray:
    return np.frombuffer(b"".join(pcm16k(path)), np.int16)


def _overlap(start: float, end: float, spans) -> float:
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b in spans)


@pytest.fixture(scope="module")
def three_speakers():
    """The reader, the talker and the bundled sample's speaker in turn, 5 s of silence between
    each (33 s, two recognition windows): (PCM bytes, the silences as (start, end), each
    speaker's turn as a Turn that runs to the middle of the silences around it)."""
    gap = np.zeros(int(GAP_SECONDS * SAMPLE_RATE), np.int16)
    parts = [_pcm(READER)[: 6 * SAMPLE_RATE], gap, _pcm(TALKER), gap, _pcm(JFK)]
    silences, voices, at = [], [], 0
    for part in parts:
        (silences if part is gap else voices).append((at / SAMPLE_RATE, (at + len(part)) / SAMPLE_RATE))
        at += len(part)
    edges = [0.0] + [(a + b) / 2 for a, b in silences] + [at / SAMPLE_RATE]
    turns = [Turn(edges[i], edges[i + 1], f"S{i + 1}") for i in range(len(voices))]
    return np.concatenate(parts).tobytes(), silences, turns


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from audio.models import resolve
    from audio.whisper import WhisperEngine

    return WhisperEngine(resolve("tiny.en", tmp_path_factory.mktemp("models")), "cpu", threads=1, compute="int8")


def test_no_word_or_cue_spans_a_silence_between_speakers(three_speakers, tiny):
    """Three speakers taking turns with 5 s of silence between them: every word the recognizer
    writes, and every subtitle cue, covers at most the voice detector's padding of a silence
    (tiny.en stretched the last word before a silence 1.3 s into it); once each word has the
    speaker whose turn it is in, no cue runs into the next speaker's turn."""
    pcm, silences, turns = three_speakers
    segments = []
    for at, window in windows([pcm]):  # as the recognize step cuts and times them
        for segment in tiny.recognize(window, "en").segments:
            words = [{**w, "start": w["start"] + at, "end": w["end"] + at} for w in segment["words"]]
            segments.append({**segment, "start": segment["start"] + at, "end": segment["end"] + at, "words": words})
    words = [w for s in segments for w in s["words"]]
    assert len(words) > 10, segments  # the test means nothing over no words
    stretched = [w for w in words if _overlap(w["start"], w["end"], silences) > MOST_SILENCE_IN_A_WORD]
    assert not stretched, (stretched, silences)
    for segment in segments:
        assert (segment["start"], segment["end"]) == (segment["words"][0]["start"], segment["words"][-1]["end"])
    for cue in cues(segments):
        assert _overlap(cue.start, cue.end, silences) <= MOST_SILENCE_IN_A_WORD, (cue, silences)
    for cue in cues(assign(segments, turns)):  # each labelled with the speaker whose turn it is in
        speaker = next(t.speaker for t in turns if t.start <= cue.start < t.end)
        assert cue.lines[0].startswith(f"[Speaker {speaker[1:]}] ") and cue.end <= next(
            t.end for t in turns if t.speaker == speaker
        ), (cue, turns)


@st.composite
def voice_and_words(draw):
    """Voice spans (sorted, apart) and words (in order, not overlapping), in seconds."""
    edges = sorted(set(draw(st.lists(st.floats(0, 60, allow_nan=False), max_size=10))))
    voice = [(edges[i], edges[i + 1]) for i in range(0, len(edges) - 1, 2) if edges[i + 1] > edges[i]]
    times = sorted(draw(st.lists(st.floats(0, 60, allow_nan=False), min_size=2, max_size=16)))
    words = [(times[i], times[i + 1]) for i in range(0, len(times) - 1, 2)]
    return voice, words


@given(voice_and_words())
def test_a_clamped_word_stays_in_its_span_on_the_voice(drawn):
    """The clamp keeps a word within its own span and in its place among the others, never
    shorter than nothing; a word a voice overlaps lies in one voice span (no silence between
    spans inside it), and a word none overlaps lasts at most UNVOICED_WORD_SECONDS."""
    voice, words = drawn
    clamped = [clamp_to_voice(start, end, voice) for start, end in words]
    for (start, end), (first, last) in zip(words, clamped, strict=True):
        assert start <= first <= last <= end
        if _overlap(start, end, voice) > 0:
            assert any(a <= first and last <= b for a, b in voice)
            assert last > first
        else:
            assert last - first <= UNVOICED_WORD_SECONDS + 1e-9
    assert all(clamped[i][1] <= clamped[i + 1][0] for i in range(len(clamped) - 1))


def test_a_word_across_a_change_of_speaker_keeps_the_voice_it_has_most():
    """A word Whisper stretched over 8.6 s, from the end of one speaker's voice to well into the
    next one's: it keeps the voice it overlaps most, and so does its subtitle."""
    segment = {"start": 18.0, "end": 28.44, "text": "not", "words": [{"word": "not", "start": 19.8, "end": 28.44}]}
    voice = [(17.5, 20.3), (28.0, 31.0)]
    clamped = words_on_voice(segment, voice)
    assert clamped["words"] == [{"word": "not", "start": 19.8, "end": 20.3}]
    assert (clamped["start"], clamped["end"]) == (19.8, 20.3)
    assert render("srt", "not", [clamped]) == "1\n00:00:19,800 --> 00:00:20,300\nnot\n"


@given(st.lists(st.tuples(st.floats(0, 3), st.floats(0.01, 2), st.sampled_from(["S1", "S2", "S3"])),
                min_size=1, max_size=40))
def test_cues_follow_their_words_and_never_span_a_change_of_speaker(drawn):
    """One segment whose words change speaker (and whose own span is wider than its words):
    every cue holds one speaker's words, is labelled with that speaker, and starts at its
    first word's start and ends at its last word's end."""
    words, at = [], 1.0
    for i, (pause, length, speaker) in enumerate(drawn):
        words.append({"word": f"w{i}", "start": round(at + pause, 3), "end": round(at + pause + length, 3),
                      "speaker": speaker})
        at = words[-1]["end"]
    segment = {"start": 0.0, "end": at + 5, "text": " ".join(w["word"] for w in words), "words": words,
               "speaker": words[0]["speaker"]}
    made = cues([segment])
    shown = [w for cue in made for line in cue.lines for w in line.split() if not w.startswith("[")
             and not w.endswith("]")]
    assert shown == [w["word"] for w in words]
    for cue in made:
        said = [words[int(w[1:])] for line in cue.lines for w in line.split() if w.startswith("w")]
        assert len({w["speaker"] for w in said}) == 1, cue
        assert cue.lines[0].startswith(f"[Speaker {said[0]['speaker'][1:]}] ")
        assert (cue.start, cue.end) == (said[0]["start"], said[-1]["end"])


def test_a_word_stretched_across_a_change_of_speaker_keeps_its_speakers_turn():
    """Speakers changing with no pause the voice detector hears (the voice runs on), and a word
    Whisper stretched from the first speaker's last words deep into the second's turn: with the
    speakers found, the word is cut at the edge of the turn it is given (it ran 1.2 s before
    it), and no cue runs from one speaker's turn into the next."""
    words = [{"word": "it", "start": 18.9, "end": 19.5}, {"word": "is", "start": 19.5, "end": 19.8},
             {"word": "not", "start": 19.8, "end": 28.44}, {"word": "so", "start": 28.44, "end": 28.9}]
    segment = {"start": 18.9, "end": 28.9, "text": "it is not so", "words": words}
    turns = [Turn(10.0, 21.0, "S1"), Turn(21.0, 35.0, "S2")]
    labelled = assign([segment], turns)
    for cue in cues(labelled):
        turn = next(t for t in turns if t.start <= cue.start < t.end)
        assert cue.end <= turn.end and cue.lines[0].startswith(f"[Speaker {turn.speaker[1:]}] "), cue
    assert [(w["word"], w["start"], w["end"]) for s in labelled for w in s["words"]] == [
        ("it", 18.9, 19.5), ("is", 19.5, 19.8), ("not", 21.0, 28.44), ("so", 28.44, 28.9)]
