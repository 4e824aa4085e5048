"""Recognition by a remote server that speaks the OpenAI transcription API.

One window of PCM goes up as a WAV file to `POST {base_url}/audio/transcriptions` and comes back
as `verbose_json`: segments, words and the language. The server may be a GPU machine on the
local network or a hosted service; all it has to share is that one endpoint.

Failures are sorted by whether a later attempt can mend them. A network error, a timeout, a 5xx
or a 429 may pass: an ordinary exception lets the pipeline count the attempt and try again after
its pause. Any other 4xx (bad audio, bad key, wrong URL, too large) answers the same every time:
`PermanentStepError(ENGINE_REFUSED)` halts the record at once instead of spending its attempts.
Nothing here retries by itself, so every try is one the database has counted.

The API key goes only into the Authorization header. It is never logged, and error messages
never carry it, even where a server quotes it back in its own error text.
"""

from __future__ import annotations

import io
import json
import re
import time
import wave
from typing import Any

import httpx
from loguru import logger

from audio.decode import BYTES_PER_SECOND, SAMPLE_RATE
from audio.recognized import Recognized, not_translating, rounded_seconds
from domain.claims import HaltReason, PermanentStepError
from domain.errors import TranscriberError
from domain.redact import redact_url

# The largest file the OpenAI endpoint takes. A 30 s window is under 1 MB; the check is what
# stops a misuse from being sent only to be refused.
MAX_UPLOAD_BYTES = 25 * 1024 * 1024

# Statuses worth another attempt later: the server is busy, rate-limited or timed out itself.
TRANSIENT_CLIENT_STATUSES = frozenset({408, 429})

ERROR_EXCERPT_CHARS = 200
CONNECT_TIMEOUT_SECONDS = 15.0

# The language names the OpenAI API answers with (Whisper's own names, lower case), and a few
# other spellings of them, to the codes the rest of the service uses.
# fmt: off
LANGUAGE_CODES = {
    "afrikaans": "af", "albanian": "sq", "amharic": "am", "arabic": "ar", "armenian": "hy",
    "assamese": "as", "azerbaijani": "az", "bashkir": "ba", "basque": "eu", "belarusian": "be",
    "bengali": "bn", "bosnian": "bs", "breton": "br", "bulgarian": "bg", "burmese": "my",
    "cantonese": "yue", "castilian": "es", "catalan": "ca", "chinese": "zh", "croatian": "hr",
    "czech": "cs", "danish": "da", "dutch": "nl", "english": "en", "estonian": "et",
    "faroese": "fo", "finnish": "fi", "flemish": "nl", "french": "fr", "galician": "gl",
    "georgian": "ka", "german": "de", "greek": "el", "gujarati": "gu", "haitian": "ht",
    "haitian creole": "ht", "hausa": "ha", "hawaiian": "haw", "hebrew": "he", "hindi": "hi",
    "hungarian": "hu", "icelandic": "is", "indonesian": "id", "italian": "it", "japanese": "ja",
    "javanese": "jw", "kannada": "kn", "kazakh": "kk", "khmer": "km", "korean": "ko", "lao": "lo",
    "latin": "la", "latvian": "lv", "letzeburgesch": "lb", "lingala": "ln", "lithuanian": "lt",
    "luxembourgish": "lb", "macedonian": "mk", "malagasy": "mg", "malay": "ms", "malayalam": "ml",
    "maltese": "mt", "mandarin": "zh", "maori": "mi", "marathi": "mr", "moldavian": "ro",
    "moldovan": "ro", "mongolian": "mn", "myanmar": "my", "nepali": "ne", "norwegian": "no",
    "nynorsk": "nn", "occitan": "oc", "panjabi": "pa", "pashto": "ps", "persian": "fa",
    "polish": "pl", "portuguese": "pt", "punjabi": "pa", "pushto": "ps", "romanian": "ro",
    "russian": "ru", "sanskrit": "sa", "serbian": "sr", "shona": "sn", "sindhi": "sd",
    "sinhala": "si", "sinhalese": "si", "slovak": "sk", "slovenian": "sl", "somali": "so",
    "spanish": "es", "sundanese": "su", "swahili": "sw", "swedish": "sv", "tagalog": "tl",
    "tajik": "tg", "tamil": "ta", "tatar": "tt", "telugu": "te", "thai": "th", "tibetan": "bo",
    "turkish": "tr", "turkmen": "tk", "ukrainian": "uk", "urdu": "ur", "uzbek": "uz",
    "valencian": "ca", "vietnamese": "vi", "welsh": "cy", "yiddish": "yi", "yoruba": "yo",
}
# fmt: on

_LANGUAGE_TAG = re.compile(r"^([a-z]{2,3})(?:[-_][a-z0-9]+)*$")


class RemoteEngineError(TranscriberError, code="remote_engine_failed"):
    """A try at the remote server that failed in a way a later try may not."""


def language_code(answer: object) -> str | None:
    """The code for the language a server names: "english" and "en" both give "en"; a region
    ("en-US") is dropped; a name we do not know gives None rather than a guess."""
    if not isinstance(answer, str):
        return None
    name = answer.strip().lower()
    if name in LANGUAGE_CODES:
        return LANGUAGE_CODES[name]
    code = _LANGUAGE_TAG.match(name)
    return code.group(1) if code else None


def wav_bytes(pcm: bytes) -> bytes:
    """The PCM (16 kHz mono s16le) as a WAV file."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(pcm)
    return out.getvalue()


class OpenAIEngine:
    """Recognises one window at a time on a server with the OpenAI transcription endpoint."""

    name = "openai"

    def __init__(self, base_url: str, api_key: str | None, model: str = "whisper-1", timeout_seconds: float = 120.0):
        self.url = base_url.rstrip("/") + "/audio/transcriptions"
        self.model = model
        self._key = api_key or None
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        # one client for every window: the connection to the server is kept between them
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout_seconds, connect=min(timeout_seconds, CONNECT_TIMEOUT_SECONDS)),
            follow_redirects=False,  # a redirect would re-send (or drop) the audio; it is reported instead
        )

    def __repr__(self) -> str:
        return f"OpenAIEngine({redact_url(self.url)!r}, model={self.model!r})"

    def close(self) -> None:
        self._client.close()

    def recognize(
        self, pcm: bytes, language: str | None, prompt: str | None = None, task: str = "transcribe"
    ) -> Recognized:
        """The window's segments and words, times in seconds from its start; `language` None
        lets the server detect it; `prompt` is sent as the API's own `prompt` field. It does
        not translate (intake lets no translation through to it)."""
        not_translating("openai", task)
        pcm = pcm[: len(pcm) - len(pcm) % 2]  # whole samples only
        duration = len(pcm) / BYTES_PER_SECOND
        if not pcm:
            return Recognized([], language)
        audio = wav_bytes(pcm)
        if len(audio) > MAX_UPLOAD_BYTES:
            raise PermanentStepError(
                HaltReason.ENGINE_REFUSED,
                f"openai engine: a window of {len(audio)} bytes is over the endpoint's limit of "
                f"{MAX_UPLOAD_BYTES} bytes",
            )
        fields = {
            "model": self.model,
            "response_format": "verbose_json",
            "timestamp_granularities[]": ["segment", "word"],
        }
        if language:
            fields["language"] = language
        if prompt:
            fields["prompt"] = prompt
        where = redact_url(self.url)
        logger.debug(
            "openai engine: sending {:.1f} s of audio to {} (model {}, language {})",
            duration,
            where,
            self.model,
            language or "detected",
        )
        began = time.monotonic()
        try:
            response = self._client.post(self.url, data=fields, files={"file": ("window.wav", audio, "audio/wav")})
        except httpx.TimeoutException:
            raise RemoteEngineError(f"openai engine: no answer from {where} in time") from None
        except httpx.HTTPError as error:
            raise RemoteEngineError(
                f"openai engine: cannot reach {where}: {self._clean(str(error)) or type(error).__name__}"
            ) from None
        logger.debug("openai engine: {} answered {} in {:.1f} s", where, response.status_code, time.monotonic() - began)
        self._check(response, where)
        try:
            answer = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise RemoteEngineError(
                f"openai engine: {where} answered {response.status_code} with something other than JSON"
            ) from None
        if not isinstance(answer, dict):
            raise RemoteEngineError(f"openai engine: {where} answered with JSON that is not an object")
        return Recognized(segments(answer, duration), language_code(answer.get("language")) or language)

    def _check(self, response: httpx.Response, where: str) -> None:
        status = response.status_code
        if 200 <= status < 300:
            return
        said = self._clean(_error_text(response))
        message = f"openai engine: {where} answered {status}" + (f": {said}" if said else "")
        if status >= 500 or status in TRANSIENT_CLIENT_STATUSES:
            raise RemoteEngineError(message)
        if 300 <= status < 400:
            location = response.headers.get("location")
            message += (
                f" (redirected to {redact_url(location)}; set TRANSCRIBER_OPENAI_BASE_URL to it)"
                if location
                else " (a redirect)"
            )
        raise PermanentStepError(HaltReason.ENGINE_REFUSED, message)

    def _clean(self, text: str) -> str:
        """A short one-line excerpt with the API key taken out, even in part: servers quote
        the key they were given in their "incorrect API key" message."""
        text = " ".join(text.split())
        if self._key:
            text = text.replace(self._key, "[key]")
            if len(self._key) >= 8:
                pieces = {self._key[i : i + 8] for i in range(len(self._key) - 7)}
                text = " ".join("[key]" if any(p in word for p in pieces) else word for word in text.split(" "))
        return text[:ERROR_EXCERPT_CHARS] + ("…" if len(text) > ERROR_EXCERPT_CHARS else "")


def _error_text(response: httpx.Response) -> str:
    """The server's own words about an error: OpenAI's {"error": {"message"}}, a framework's
    {"detail"}, or the body as it is."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        for key in ("error", "detail", "message"):
            if isinstance(body.get(key), str):
                return body[key]
    return json.dumps(body)[: ERROR_EXCERPT_CHARS * 2]


def segments(answer: dict, duration: float) -> list[dict]:
    """The segments of a verbose_json answer, each with its words, times kept within the window.

    Words come either inside each segment or, as OpenAI sends them, in one top-level list; a
    top-level word goes to the segment that holds its middle (or the nearest one). An answer
    with text and no segments becomes one segment spanning the window.
    """
    loose = _words(answer.get("words"), duration)
    found = []
    for raw in answer.get("segments") or []:
        if not isinstance(raw, dict):
            raise RemoteEngineError("openai engine: a segment in the answer is not an object")
        text = str(raw.get("text") or "").strip()
        start, end = _span(raw.get("start"), raw.get("end"), duration)
        found.append(
            {
                "start": start,
                "end": end,
                "text": text,
                "words": _words(raw.get("words"), duration),
                "_own": "words" in raw,
            }
        )
    found.sort(key=lambda s: (s["start"], s["end"]))
    if not found:
        text = str(answer.get("text") or "").strip()
        if not text:
            return []
        return [{"start": 0.0, "end": rounded_seconds(duration), "text": text, "words": loose}]
    if not any(s["_own"] for s in found):
        for word in loose:
            _segment_holding(found, (word["start"] + word["end"]) / 2)["words"].append(word)
    for segment in found:
        del segment["_own"]
    return [s for s in found if s["text"] or s["words"]]


def _segment_holding(found: list[dict], at: float) -> dict:
    """The segment whose span holds the moment `at`, else the one nearest to it."""
    for segment in found:
        if segment["start"] <= at <= segment["end"]:
            return segment
    return min(found, key=lambda s: min(abs(s["start"] - at), abs(s["end"] - at)))


def _words(raw: object, duration: float) -> list[dict]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RemoteEngineError("openai engine: the words in the answer are not a list")
    words: list[dict[str, Any]] = []
    for item in raw:
        if not isinstance(item, dict):
            raise RemoteEngineError("openai engine: a word in the answer is not an object")
        text = str(item.get("word") or "").strip()
        if text:
            start, end = _span(item.get("start"), item.get("end"), duration)
            words.append({"word": text, "start": start, "end": end})
    words.sort(key=lambda w: w["start"])
    return words


def _span(start: Any, end: Any, duration: float) -> tuple[float, float]:
    """Start and end as seconds within [0, duration]: servers overshoot the window's end a little."""
    try:
        start, end = float(start), float(end)
    except (TypeError, ValueError):
        raise RemoteEngineError("openai engine: a time in the answer is not a number") from None
    if start != start or end != end:  # NaN
        raise RemoteEngineError("openai engine: a time in the answer is not a number")
    start = min(max(start, 0.0), duration)
    end = min(max(end, start), duration)
    return rounded_seconds(start), rounded_seconds(end)
