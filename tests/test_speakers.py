"""Offline speaker diarization on real recorded speech (the optional extra
`speakers`). Every test here is skipped, saying so, where the extra is not installed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from audio import speakers
from audio.decode import SAMPLE_RATE, pcm16k
from audio.formats import render
from conftest import ROOT

pytestmark = pytest.mark.skipif(not speakers.available(),
                                reason="the `speakers` extra is not installed (pip install -e '.[speakers]')")

READER = ROOT / "tests" / "data" / "librivox_reader.ogg"   # a LibriVox reader (public domain), female
TALKER = ROOT / "tests" / "data" / "mfa_uhuh.flac"          # the MFA test speaker, male


def samples(path: Path) -> np.ndarray:
    return np.frombuffer(b"".join(pcm16k(path)), np.int16).astype(np.float32) / 32768.0


@pytest.fixture(scope="module")
def conversation():
    """Reader, talker, reader again: (samples, reference spans (start, end, who))."""
    reader, talker = samples(READER), samples(TALKER)
    half = len(reader) // 2
    gap = np.zeros(int(0.6 * SAMPLE_RATE), np.float32)
    parts, spans, at = [], [], 0.0
    for who, piece in (("reader", reader[:half]), ("talker", talker), ("reader", reader[half:])):
        parts += [piece, gap]
        spans.append((at, at + len(piece) / SAMPLE_RATE, who))
        at += (len(piece) + len(gap)) / SAMPLE_RATE
    return np.concatenate(parts), spans


def true_speaker(spans, start: float, end: float) -> str | None:
    middle = (start + end) / 2
    return next((who for a, b, who in spans if a - 0.3 <= middle <= b + 0.3), None)


def test_two_speakers_are_found_and_their_turns_follow_the_voices(conversation):
    """A conversation of two real speakers gives two speakers, and the found turns
    cover the true ones (scored frame by frame under the best mapping of labels)."""
    from audio.speakers.diarize import diarize

    audio, spans = conversation
    turns = diarize(audio)
    assert len({t.speaker for t in turns}) == 2
    frames = np.arange(0, len(audio) / SAMPLE_RATE, 0.01)
    truth = np.array([true_speaker(spans, f, f) or "" for f in frames])
    found = np.array([""] * len(frames), dtype=object)
    for turn in turns:
        found[(frames >= turn.start) & (frames < turn.end)] = turn.speaker
    scored = (truth != "") & (found != "")
    agree = max(np.mean([(t == "reader") == (f == "S1") for t, f in zip(truth[scored], found[scored])]),
                np.mean([(t == "reader") == (f == "S2") for t, f in zip(truth[scored], found[scored])]))
    assert agree > 0.9, f"only {agree:.0%} of the speech frames have the right speaker"


def test_each_word_gets_its_speaker_and_segments_never_span_two(conversation):
    """Words get speakers: the recognised words get the speaker of the turn they overlap most:
    all but at most two around each change of speaker are right; and the formats label it."""
    from audio.engines import build, spec
    from audio.speakers.assign import assign
    from audio.speakers.diarize import diarize
    from conftest import settings

    audio, spans = conversation
    engine = build(spec(settings()))
    pcm = (audio * 32767).astype(np.int16).tobytes()
    segments = engine.recognize(pcm, "en").segments
    labelled = assign(segments, diarize(audio))
    words = [w for s in labelled for w in s["words"]]
    assert len(words) >= 10
    reader_label = next(w["speaker"] for w in words if true_speaker(spans, w["start"], w["end"]) == "reader")
    wrong = [w for w in words if (w["speaker"] == reader_label) != (true_speaker(spans, w["start"], w["end"]) == "reader")]
    assert len(wrong) <= 2 * (len(spans) - 1), f"{len(wrong)} of {len(words)} words have the wrong speaker"
    for segment in labelled:
        assert {w["speaker"] for w in segment["words"]} == {segment["speaker"]}
    srt = render("srt", "", labelled)
    assert "[Speaker 1]" in srt and "[Speaker 2]" in srt
    named = render("txt", "", labelled, names={"S1": "Alice"})
    assert named.startswith("[Alice] ") and "\n\n[Speaker 2] " in named


def test_silence_has_no_speakers_and_one_voice_is_one_speaker():
    """No speech gives no turns; a single speaker is not split in two."""
    from audio.speakers.diarize import diarize

    assert diarize(np.zeros(3 * SAMPLE_RATE, np.float32)) == []
    turns = diarize(samples(READER))
    assert len({t.speaker for t in turns}) == 1


def test_a_changed_model_file_is_refused(tmp_path, monkeypatch):
    """The speaker model's weights are hash-checked: a model file that is not the pinned one is not loaded."""
    from audio.speakers import embed

    bad = tmp_path / "campplus.onnx"
    bad.write_bytes(embed.MODEL.read_bytes()[:-1] + b"\0")
    monkeypatch.setattr(embed, "MODEL", bad)
    monkeypatch.setattr(embed, "_session", None)
    with pytest.raises(embed.SpeakerModelError, match="SHA-256"):
        embed.session()
