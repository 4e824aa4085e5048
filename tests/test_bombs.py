"""Decompression bombs: a few kB that would expand to hours of audio. Intake
refuses a declared duration over TRANSCRIBER_MAX_AUDIO_SECONDS (413) and absurd stream
parameters (415), storing nothing; conversion stops at the cap and halts with `audio_too_long`
when the declaration lied. Every file here is real, written by PyAV (or the stdlib's wave)."""
from __future__ import annotations

import subprocess
import sys
import wave
from pathlib import Path

import av
import numpy as np
import pytest

from actors.work import Outcome, run_once
from audio.decode import BYTES_PER_SECOND, TooLong, UnsupportedStream, pcm16k, probe
from conftest import kinds, settings
from domain.claims import NO_WORK
from domain.stages import Step
from test_http import make_api  # noqa: F401  (the fixture)


def silence(path: Path, seconds: float, *, fmt: str = "flac", codec: str = "flac", rate: int = 16000,
            layout: str = "mono") -> Path:
    """`seconds` of digital silence: compresses to almost nothing, expands to all of it."""
    channels = len(av.AudioLayout(layout).channels)
    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream(codec, rate=rate, layout=layout)
        size = stream.codec_context.frame_size or 4096
        left = int(rate * seconds)
        while left > 0:
            count = min(size, left)
            frame = av.AudioFrame.from_ndarray(np.zeros((1, count * channels), np.int16), format="s16",
                                               layout=layout)
            frame.rate = rate
            out.mux(stream.encode(frame))
            left -= count
        out.mux(stream.encode(None))
    return path


def lying_flac(path: Path, seconds: float, declared: float | None) -> Path:
    """A silent FLAC of `seconds` whose STREAMINFO declares `declared` seconds (None: unknown)."""
    data = bytearray(silence(path, seconds).read_bytes())
    assert data[:4] == b"fLaC" and data[4] & 0x7F == 0  # STREAMINFO comes first
    fields = int.from_bytes(data[18:26], "big")  # sample rate, channels, bits, 36 bits of samples
    total = 0 if declared is None else int(declared * 16000)
    data[18:26] = ((fields >> 36 << 36) | total).to_bytes(8, "big")
    path.write_bytes(data)
    return path


def many_channels(path: Path, channels: int) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels), out.setsampwidth(2), out.setframerate(16000)
        out.writeframes(bytes(channels * 2 * 1600))
    return path


def stored(db) -> tuple[int, int]:
    with db.transaction() as conn:
        return (conn.execute("SELECT count(*) AS n FROM records").fetchone()["n"],
                conn.execute("SELECT count(*) AS n FROM blobs").fetchone()["n"])


def test_probe_and_decoder_refuse_bombs(tmp_path):
    """A 7 kB WAV at 1 Hz (two hours at 16 kHz) and a 200-channel WAV are refused
    before decoding; a declared duration over the cap is refused; a sane 6-channel 48 kHz file
    passes."""
    one_hz = silence(tmp_path / "bomb.wav", 7000, fmt="wav", codec="pcm_s16le", rate=1)
    assert one_hz.stat().st_size < 16_000
    with pytest.raises(UnsupportedStream, match="sample rate of 1 Hz"):
        probe(one_hz)
    with pytest.raises(UnsupportedStream):
        next(pcm16k(one_hz))
    with pytest.raises(UnsupportedStream, match="200 channels"):
        probe(many_channels(tmp_path / "wide.wav", 200))
    long_flac = silence(tmp_path / "long.flac", 120)
    assert probe(long_flac) == pytest.approx(120)
    with pytest.raises(TooLong, match="lasts 120s, longer than the limit of 60s") as refused:
        probe(long_flac, max_seconds=60)
    assert refused.value.declared
    surround = silence(tmp_path / "surround.flac", 2, rate=48000, layout="5.1")
    assert probe(surround, max_seconds=60) == pytest.approx(2)


def test_decoding_stops_at_the_cap_whatever_was_declared(tmp_path):
    """A FLAC that declares 1 s and holds 120 s passes the probe, but decoding
    hands on no more than the cap and then stops with TooLong."""
    liar = lying_flac(tmp_path / "liar.flac", 120, declared=1)
    assert probe(liar, max_seconds=60) == pytest.approx(1)
    handed_on = 0
    with pytest.raises(TooLong) as stopped:
        for piece in pcm16k(liar, max_seconds=60):
            handed_on += len(piece)
    assert not stopped.value.declared
    assert handed_on <= 60 * BYTES_PER_SECOND
    assert sum(map(len, pcm16k(liar))) == 120 * BYTES_PER_SECOND  # without a cap: all of it


def test_http_intake_refuses_bombs_and_stores_nothing(make_api, tmp_path, db):  # noqa: F811
    """Over HTTP: a declared duration over TRANSCRIBER_MAX_AUDIO_SECONDS is 413
    audio_too_long, a 1 Hz WAV and a 200-channel WAV are 415 unsupported_audio, each with
    `{error, message}` naming the problem; nothing is stored. Within the cap it is accepted."""
    api = make_api(max_audio_seconds=60)
    token = api.token("alice")
    answer = api.upload(token, silence(tmp_path / "hour.flac", 120))
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"] == "audio_too_long"
    assert "TRANSCRIBER_MAX_AUDIO_SECONDS" in answer.json()["message"] and "hour.flac" in answer.json()["message"]
    for path, words in ((silence(tmp_path / "bomb.wav", 7000, fmt="wav", codec="pcm_s16le", rate=1), "1 Hz"),
                        (many_channels(tmp_path / "wide.wav", 200), "200 channels")):
        answer = api.upload(token, path)
        assert answer.status_code == 415, answer.text
        assert answer.json()["error"] == "unsupported_audio" and words in answer.json()["message"]
    assert stored(db) == (0, 0)
    assert api.upload(token, silence(tmp_path / "minute.flac", 50)).status_code == 201


def test_cli_intake_refuses_bombs_in_one_line(store, owner, env, tmp_path, db):
    """From the command line: `transcriber submit` of a file over the cap or of a
    1 Hz WAV prints one line naming the problem and exits non-zero; nothing is stored."""
    cli_env = {**env, "TRANSCRIBER_MAX_AUDIO_SECONDS": "60"}
    for path, words in ((silence(tmp_path / "long.flac", 120), "TRANSCRIBER_MAX_AUDIO_SECONDS"),
                        (silence(tmp_path / "bomb.wav", 7000, fmt="wav", codec="pcm_s16le", rate=1), "1 Hz")):
        done = subprocess.run([sys.executable, "-m", "transcriber.cli", "submit", str(path), "--owner", "alice"],
                              env=cli_env, capture_output=True, text=True, timeout=120)
        assert done.returncode != 0
        assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr, done.stderr
        assert "Traceback" not in done.stderr
    assert stored(db) == (0, 0)


@pytest.mark.parametrize("declared", [1, None], ids=["declares-1s", "declares-nothing"])
def test_conversion_halts_audio_too_long_when_the_declaration_lied(store, owner, tmp_path, db, declared):
    """INV-1: a file whose header lies about its length (or states none) is
    accepted, and its conversion stops at the cap and halts the record with audio_too_long at
    once (no attempts burnt); no converted audio is left behind."""
    from service.intake import accept_file

    s = settings(max_audio_seconds=60)
    record_id = accept_file(store, s, lying_flac(tmp_path / "liar.flac", 120, declared), owner_id=owner["id"])
    assert run_once(store, s, Step.CONVERT) == Outcome.HALTED
    row = store.read_record(record_id)
    assert (row["stage"], row["halt_reason"], row["converted_blob_id"]) == ("created", "audio_too_long", None)
    assert "limit of 60s" in row["halt_error"] and "TRANSCRIBER_MAX_AUDIO_SECONDS" in row["halt_error"]
    assert stored(db) == (1, 1)  # the original only
    assert kinds(store, record_id) == ["accepted", "claimed", "halted"]
    assert run_once(store, s, Step.CONVERT) is NO_WORK  # a halted record is not claimed again
