"""The remote recognition engine (TRANSCRIBER_ENGINE=openai) against a live stand-in server.

The stand-in is a real HTTP server on 127.0.0.1 that speaks the OpenAI transcription endpoint:
it reads the multipart upload, opens the WAV it was sent, checks the bearer key as a hosted
service would and answers verbose_json shaped as OpenAI's, timed from the audio it received.
"""
from __future__ import annotations

import asyncio
import io
import socket
import threading
import time
import wave

import httpx
import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from loguru import logger

from audio.decode import BYTES_PER_SECOND
from audio.remote import MAX_UPLOAD_BYTES, OpenAIEngine, language_code
from domain.claims import HaltReason, PermanentStepError
from media import speech_pcm
from service.config import ConfigError, load

KEY = "sk-test-0123456789abcdefSECRET"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openai_answer(seconds: float, language: str = "english") -> dict:
    """verbose_json as OpenAI gives it: segments with their extra fields, words in one top-level list."""
    half = round(seconds / 2, 2)
    return {
        "task": "transcribe", "language": language, "duration": seconds, "text": "Hello there. General Kenobi.",
        "segments": [
            {"id": 0, "seek": 0, "start": 0.0, "end": half, "text": " Hello there.", "tokens": [1, 2],
             "temperature": 0.0, "avg_logprob": -0.2, "compression_ratio": 1.1, "no_speech_prob": 0.01},
            {"id": 1, "seek": 0, "start": half, "end": seconds + 0.4, "text": " General Kenobi.", "tokens": [3],
             "temperature": 0.0, "avg_logprob": -0.3, "compression_ratio": 1.1, "no_speech_prob": 0.01},
        ],
        "words": [
            {"word": "Hello", "start": 0.1, "end": 0.4},
            {"word": "there.", "start": 0.5, "end": half - 0.05},
            {"word": "General", "start": half + 0.1, "end": half + 0.5},
            {"word": "Kenobi.", "start": half + 0.6, "end": seconds + 0.3},
        ],
    }


class StandIn:
    """A live OpenAI-compatible server for one test. `reply` (status, JSON) overrides its answer;
    `delay` makes it slow; `received` keeps what each request carried."""

    def __init__(self, key: str | None = KEY):
        self.key = key
        self.received: list[dict] = []
        self.reply: tuple[int, object] | None = None
        self.delay = 0.0
        self.released = None
        app = FastAPI()
        app.post("/v1/audio/transcriptions")(self.transcriptions)
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the stand-in server did not start"
            time.sleep(0.05)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def transcriptions(self, request: Request):
        form = await request.form()
        upload = form["file"]
        audio = await upload.read()
        with wave.open(io.BytesIO(audio), "rb") as wav:
            heard = {"channels": wav.getnchannels(), "sample_width": wav.getsampwidth(),
                     "rate": wav.getframerate(), "frames": wav.getnframes(),
                     "pcm": wav.readframes(wav.getnframes())}
        self.received.append({
            "authorization": request.headers.get("authorization"), "filename": upload.filename,
            "model": form.get("model"), "language": form.get("language"), "prompt": form.get("prompt"),
            "response_format": form.get("response_format"),
            "granularities": form.getlist("timestamp_granularities[]"), "wav": heard,
        })
        if self.delay:
            self.loop, self.released = asyncio.get_running_loop(), asyncio.Event()
            try:
                await asyncio.wait_for(self.released.wait(), self.delay)
            except asyncio.TimeoutError:
                pass
        given = (request.headers.get("authorization") or "").removeprefix("Bearer ")
        if self.key is not None and given != self.key:
            return JSONResponse({"error": {"message": f"Incorrect API key provided: {given}.",
                                           "type": "invalid_request_error", "code": "invalid_api_key"}}, 401)
        if self.reply is not None:
            return JSONResponse(self.reply[1], self.reply[0])
        return JSONResponse(openai_answer(heard["frames"] / heard["rate"]))

    def release(self):
        """Let a delayed answer go, so the server can stop without waiting for it."""
        if self.released is not None:
            self.loop.call_soon_threadsafe(self.released.set)

    def stop(self):
        self.release()
        self.server.should_exit = True
        self.thread.join(timeout=30)


@pytest.fixture
def standin():
    server = StandIn()
    yield server
    server.stop()


@pytest.fixture
def log_lines():
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message)), level="DEBUG")
    yield lines
    logger.remove(sink)


def test_real_speech_goes_up_as_wav_and_comes_back_as_timed_segments(standin, log_lines):
    """The window of real speech reaches the server as a 16 kHz mono WAV with model, language,
    format and key; segments, words and language come back timed within the window."""
    pcm = speech_pcm()
    seconds = len(pcm) / BYTES_PER_SECOND
    engine = OpenAIEngine(standin.base_url, KEY, model="large-v3")

    result = engine.recognize(pcm, "en")

    [sent] = standin.received
    assert sent["wav"] == {"channels": 1, "sample_width": 2, "rate": 16000, "frames": len(pcm) // 2, "pcm": pcm}
    assert sent["filename"].endswith(".wav")
    assert (sent["model"], sent["language"], sent["response_format"]) == ("large-v3", "en", "verbose_json")
    assert sent["granularities"] == ["segment", "word"]
    assert sent["authorization"] == f"Bearer {KEY}"
    half = round(seconds / 2, 2)
    assert result.language == "en"
    assert [(s["start"], s["end"], s["text"]) for s in result.segments] == [
        (0.0, half, "Hello there."), (half, round(seconds, 3), "General Kenobi.")]
    assert [[w["word"] for w in s["words"]] for s in result.segments] == [["Hello", "there."], ["General", "Kenobi."]]
    assert result.segments[1]["words"][1]["end"] == round(seconds, 3)  # the server's overshoot is cut at the window
    assert not any(KEY in line for line in log_lines)


def test_no_language_lets_the_server_detect_it_and_its_name_becomes_a_code(standin):
    """language None sends no language field; the name the server detects ("russian") is kept as its code."""
    standin.reply = (200, openai_answer(2.0, language="russian"))
    result = OpenAIEngine(standin.base_url, KEY).recognize(speech_pcm()[:2 * BYTES_PER_SECOND], None)
    assert standin.received[0]["language"] is None
    assert standin.received[0]["model"] == "whisper-1"
    assert result.language == "ru"


def test_language_names_and_codes():
    assert [language_code(x) for x in ("english", "English ", "en", "pt-BR", "yue", "cantonese", "klingonese", None, 3)] \
        == ["en", "en", "en", "pt", "yue", "yue", None, None, None]


def test_words_inside_segments_are_taken_as_they_are(standin):
    """Servers that send words per segment (and no top-level list) keep them where they are."""
    standin.reply = (200, {"language": "de", "text": "Guten Tag. Auf Wiedersehen.", "segments": [
        {"start": 3.0, "end": 5.0, "text": " Auf Wiedersehen.",
         "words": [{"word": " Auf", "start": 3.0, "end": 3.5}, {"word": " Wiedersehen.", "start": 3.6, "end": 5.0}]},
        {"start": 0.0, "end": 2.0, "text": " Guten Tag.",
         "words": [{"word": " Guten", "start": 0.0, "end": 0.8}, {"word": " Tag.", "start": 0.9, "end": 2.0}]},
    ]})
    result = OpenAIEngine(standin.base_url, KEY).recognize(speech_pcm(), "de")
    assert result.language == "de"
    assert result.segments == [
        {"start": 0.0, "end": 2.0, "text": "Guten Tag.",
         "words": [{"word": "Guten", "start": 0.0, "end": 0.8}, {"word": "Tag.", "start": 0.9, "end": 2.0}]},
        {"start": 3.0, "end": 5.0, "text": "Auf Wiedersehen.",
         "words": [{"word": "Auf", "start": 3.0, "end": 3.5}, {"word": "Wiedersehen.", "start": 3.6, "end": 5.0}]},
    ]


def test_plain_text_answer_is_one_segment_spanning_the_window(standin):
    pcm = speech_pcm()[:3 * BYTES_PER_SECOND]
    standin.reply = (200, {"text": " Hello world. "})
    result = OpenAIEngine(standin.base_url, KEY).recognize(pcm, "en")
    assert result.segments == [{"start": 0.0, "end": 3.0, "text": "Hello world.", "words": []}]
    assert result.language == "en"


def test_no_key_sends_no_authorization():
    server = StandIn(key=None)
    try:
        result = OpenAIEngine(server.base_url, None).recognize(speech_pcm(), None)
        assert server.received[0]["authorization"] is None
        assert result.language == "en" and len(result.segments) == 2
    finally:
        server.stop()


@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_and_rate_limits_are_ordinary_failures(standin, status):
    """P4: a failure a later attempt may mend is an ordinary exception, counted and retried by the pipeline."""
    standin.reply = (status, {"error": {"message": "the GPU is busy, try later", "type": "server_error"}})
    with pytest.raises(Exception) as failure:
        OpenAIEngine(standin.base_url, KEY).recognize(speech_pcm(), "en")
    assert not isinstance(failure.value, PermanentStepError)
    assert str(status) in str(failure.value) and "the GPU is busy" in str(failure.value)


def test_connection_refused_is_an_ordinary_failure(log_lines):
    port = free_port()  # nothing listens there any more
    with pytest.raises(Exception) as failure:
        OpenAIEngine(f"http://127.0.0.1:{port}/v1", KEY).recognize(speech_pcm(), "en")
    assert not isinstance(failure.value, PermanentStepError)
    assert f"127.0.0.1:{port}" in str(failure.value)
    assert KEY not in str(failure.value) and not any(KEY in line for line in log_lines)


def test_a_server_too_slow_is_an_ordinary_failure(standin):
    standin.delay = 60.0
    with pytest.raises(Exception) as failure:
        OpenAIEngine(standin.base_url, KEY, timeout_seconds=1.0).recognize(speech_pcm(), "en")
    assert not isinstance(failure.value, PermanentStepError)
    assert "in time" in str(failure.value)


@pytest.mark.parametrize("status, said", [(400, "Invalid file format."), (404, "Not Found"), (413, "too large")])
def test_refusals_that_no_retry_mends_halt_the_record(standin, status, said):
    standin.reply = (status, {"error": {"message": said, "type": "invalid_request_error"}})
    with pytest.raises(PermanentStepError) as refused:
        OpenAIEngine(standin.base_url, KEY).recognize(speech_pcm(), "en")
    assert refused.value.reason is HaltReason.ENGINE_REFUSED
    assert str(status) in str(refused.value) and said in str(refused.value)


def test_a_wrong_key_halts_and_the_key_is_never_shown(standin, log_lines, caplog):
    """401: the server quotes the key it got in its message; neither the message nor any log line carries it."""
    wrong = "sk-wrong-9876543210zyxwvuPRIVATE"
    with caplog.at_level("DEBUG"):
        with pytest.raises(PermanentStepError) as refused:
            OpenAIEngine(standin.base_url, wrong).recognize(speech_pcm(), "en")
    assert standin.received[0]["authorization"] == f"Bearer {wrong}"  # the server really got it
    message = str(refused.value)
    assert refused.value.reason is HaltReason.ENGINE_REFUSED
    assert "401" in message and "Incorrect API key provided" in message
    assert wrong not in message and "9876543210" not in message
    assert wrong not in repr(OpenAIEngine(standin.base_url, wrong))
    assert log_lines and not any(wrong in line for line in log_lines)
    assert wrong not in caplog.text


def test_a_window_over_the_upload_limit_is_refused_before_sending(standin):
    too_big = bytes(MAX_UPLOAD_BYTES + 2)
    with pytest.raises(PermanentStepError) as refused:
        OpenAIEngine(standin.base_url, KEY).recognize(too_big, "en")
    assert refused.value.reason is HaltReason.ENGINE_REFUSED
    assert str(MAX_UPLOAD_BYTES) in str(refused.value)
    assert standin.received == []


def test_garbled_answer_is_an_ordinary_failure(standin):
    standin.reply = (200, {"segments": [{"start": "soon", "end": 1.0, "text": "x"}]})
    with pytest.raises(Exception) as failure:
        OpenAIEngine(standin.base_url, KEY).recognize(speech_pcm(), "en")
    assert not isinstance(failure.value, PermanentStepError)


def test_openai_engine_without_base_url_fails_at_start_naming_it():
    with pytest.raises(ConfigError) as bad:
        load({"TRANSCRIBER_ENGINE": "openai", "TRANSCRIBER_OPENAI_API_KEY": KEY})
    assert bad.value.variable == "TRANSCRIBER_OPENAI_BASE_URL"
    assert "TRANSCRIBER_OPENAI_BASE_URL" in str(bad.value)


def test_engine_from_the_configuration_recognises(standin):
    """The settings a deployment gives (base URL with a trailing slash, key, model) reach the server."""
    the_settings = load({"TRANSCRIBER_ENGINE": "openai", "TRANSCRIBER_OPENAI_BASE_URL": standin.base_url + "/",
                         "TRANSCRIBER_OPENAI_API_KEY": KEY, "TRANSCRIBER_OPENAI_MODEL": "distil-large-v3"})
    engine = OpenAIEngine(the_settings.openai_base_url, the_settings.openai_api_key, the_settings.openai_model)
    result = engine.recognize(speech_pcm(), None)
    assert standin.received[0]["model"] == "distil-large-v3"
    assert standin.received[0]["authorization"] == f"Bearer {KEY}"
    assert [s["text"] for s in result.segments] == ["Hello there.", "General Kenobi."]
