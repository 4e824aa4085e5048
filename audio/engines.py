"""Recognition engines: one window of PCM in (16 kHz mono s16), timed segments with words out.

Every window is recognised from a fresh state: nothing one recording (or one window) leaves in
an engine reaches the next, so the same bytes give the same text whatever ran before, in any
worker. Decoding is deterministic (temperature 0, no sampling fallback, no VAD filter).

Workers reach a local engine through `IsolatedEngine`, which runs it in a child process of its
own with a deadline on every exchange; the remote engine speaks HTTP from the worker itself.
"""
from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from loguru import logger

from audio.decode import BYTES_PER_SECOND

Beat = Callable[..., None]


@dataclass
class Recognized:
    """What an engine makes of one window of audio (at most WINDOW_SECONDS of 16 kHz mono s16).

    Times are seconds from the window's start. Each segment is {"start", "end", "text",
    "words"}, words a list of {"word", "start", "end"} (empty where an engine gives none);
    `language` is the code used or detected, None where the engine cannot tell.
    """

    segments: list[dict]
    language: str | None = None


class Engine(Protocol):
    name: str

    def recognize(self, pcm: bytes, language: str | None) -> Recognized:
        """Recognise one window; `language` None lets a multilingual engine detect it."""


def _round(seconds: float) -> float:
    return round(float(seconds), 3)


class WhisperEngine:
    """faster-whisper (CTranslate2): int8 on CPU, float16 on CUDA; beam search at temperature 0
    only, each window on its own (no conditioning on a previous window's text).

    Whisper at temperature 0 can fall into a loop, writing one phrase over and over to the end
    of the window. Whisper's own remedy, decoding again at a higher temperature, samples and
    makes the text random; here the guard is deterministic: a window whose text compresses
    better than LOOP_COMPRESSION (zlib, Whisper's own test) is decoded again with repeated
    4-grams forbidden, and if that text still loops, its repeated tail is cut (`cut_repeats`).
    """

    name = "faster-whisper"
    OPTIONS = dict(beam_size=5, temperature=0.0, vad_filter=False, condition_on_previous_text=False,
                   word_timestamps=True)
    RETRY_OPTIONS = dict(no_repeat_ngram_size=4)  # what the second decoding of a looping window adds

    def __init__(self, model: str, device: str = "cpu", threads: int = 0, download_root: str | None = None):
        from faster_whisper import WhisperModel

        compute = "int8" if device == "cpu" else "float16"
        self.model = WhisperModel(model, device=device, compute_type=compute, cpu_threads=threads,
                                  download_root=download_root)

    def recognize(self, pcm: bytes, language: str | None) -> Recognized:
        import numpy as np

        audio = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768.0
        result = self._decode(audio, language)
        if loops(result.segments):
            result = self._decode(audio, language, **self.RETRY_OPTIONS)
            if loops(result.segments):
                result.segments = cut_repeats(result.segments)
        return result

    def _decode(self, audio, language: str | None, **extra) -> Recognized:
        pieces, info = self.model.transcribe(audio, language=language, **{**self.OPTIONS, **extra})
        segments = []
        for piece in pieces:
            text = piece.text.strip()
            if not text:
                continue
            words = [{"word": w.word.strip(), "start": _round(w.start), "end": _round(w.end)}
                     for w in (piece.words or []) if w.word.strip()]
            segments.append({"start": _round(piece.start), "end": _round(piece.end), "text": text, "words": words})
        return Recognized(segments, info.language)


# --- the repetition guard ------------------------------------------------------------------------

LOOP_COMPRESSION = 2.4   # text that zlib shrinks more than this repeats itself (Whisper's threshold)
LOOP_REPEATS = 3         # a phrase said this many times in a row, in looping text, is a loop
LOOP_LONGEST = 24        # the longest phrase (in words) looked for


def compression_ratio(text: str) -> float:
    """How well zlib compresses `text`: about 1.5 for speech, far more for a phrase repeated."""
    raw = text.encode("utf-8")
    return len(raw) / len(zlib.compress(raw)) if raw else 0.0


def loops(segments: list[dict]) -> bool:
    """Whether a window's text repeats itself like a decoding loop."""
    return compression_ratio(" ".join(s["text"] for s in segments)) > LOOP_COMPRESSION


def _token(word: str) -> str:
    return "".join(c for c in word.casefold() if c.isalnum())


def cut_repeats(segments: list[dict]) -> list[dict]:
    """The segments with every run of a phrase said LOOP_REPEATS times or more in a row (across
    segments too) cut to its first saying; segments left empty are dropped. Words are the
    segments' timed words where there are any, else their text split at spaces."""
    items = []  # (segment number, word as written, its timed entry or None)
    for number, segment in enumerate(segments):
        if segment["words"]:
            items += [(number, w["word"], w) for w in segment["words"]]
        else:
            items += [(number, w, None) for w in segment["text"].split()]
    tokens = [_token(word) for _, word, _ in items]
    keep = [True] * len(items)
    at = 0
    while at < len(tokens):
        for size in range(1, min(LOOP_LONGEST, (len(tokens) - at) // LOOP_REPEATS) + 1):
            phrase = tokens[at:at + size]
            times = 1
            while tokens[at + times * size: at + (times + 1) * size] == phrase:
                times += 1
            if times >= LOOP_REPEATS:
                keep[at + size: at + times * size] = [False] * ((times - 1) * size)
                at += times * size
                break
        else:
            at += 1
    out = []
    for number, segment in enumerate(segments):
        kept = [(word, entry) for (n, word, entry), k in zip(items, keep) if n == number and k]
        if kept:
            entries = [entry for _, entry in kept if entry is not None]
            out.append({**segment, "text": " ".join(word for word, _ in kept), "words": entries,
                        **({"end": entries[-1]["end"]} if entries else {})})
    return out


class PocketsphinxEngine:
    """The light engine: pocketsphinx with its bundled en-us model, for the smallest machines.

    Speech is cut into utterances by voice activity detection (and at most MAX_UTTERANCE seconds
    each). Its decoder adapts to the audio as it goes, so every window gets a new decoder.
    """

    name = "pocketsphinx"
    MAX_UTTERANCE = 15.0      # seconds of speech decoded at once
    SEGMENT_PAUSE = 0.3       # a pause this long ends a segment
    SEGMENT_LONGEST = 8.0     # and no segment runs longer

    def recognize(self, pcm: bytes, language: str | None) -> Recognized:
        from pocketsphinx import Decoder, Endpointer

        utterance = _Utterance(Decoder(loglevel="FATAL"), self)
        endpointer = Endpointer()
        frame_bytes = endpointer.frame_bytes
        whole = len(pcm) - len(pcm) % frame_bytes
        for at in range(0, whole, frame_bytes):
            speech = endpointer.process(pcm[at:at + frame_bytes])
            if speech is not None:
                utterance.add(speech, endpointer.speech_start, ended=not endpointer.in_speech)
        if endpointer.in_speech:
            # end_stream wants a non-empty last frame: silence stands in when none is left
            speech = endpointer.end_stream(pcm[whole:] or bytes(frame_bytes))
            if speech is not None:
                utterance.add(speech, endpointer.speech_start, ended=True)
        utterance.end()
        return Recognized(utterance.segments, "en")

    def words(self, decoder, start: float) -> list[tuple[str, float, float]]:
        """The words of the utterance just ended, timed from the window's start."""
        frame_seconds = 1.0 / decoder.config["frate"]
        return [(_WORD_VARIANT.sub("", seg.word), start + seg.start_frame * frame_seconds,
                 start + (seg.end_frame + 1) * frame_seconds) for seg in decoder.seg()]


class _Utterance:
    """Speech fed to the decoder in quarter-second batches; an utterance is cut at
    MAX_UTTERANCE seconds."""

    BATCH_BYTES = BYTES_PER_SECOND // 4

    def __init__(self, decoder, engine: PocketsphinxEngine):
        self.decoder, self.engine = decoder, engine
        self.segments: list[dict] = []
        self.open = False
        self.start: float | None = None  # where the open utterance starts, in seconds
        self.fed = 0
        self.batch = bytearray()
        self.longest = int(engine.MAX_UTTERANCE * BYTES_PER_SECOND)

    def add(self, speech: bytes, speech_start: float, *, ended: bool) -> None:
        if not self.open:
            self.decoder.start_utt()
            self.open, self.fed = True, 0
            self.start = speech_start if self.start is None else self.start
        self.batch += speech
        if len(self.batch) >= self.BATCH_BYTES or ended:
            self._flush()
        if ended:
            self.end()
            self.start = None
        elif self.fed >= self.longest:
            cut_at = self.start + self.fed / BYTES_PER_SECOND
            self.end()
            self.start = cut_at  # the rest of this stretch of speech goes on from here

    def _flush(self) -> None:
        if self.batch:
            self.decoder.process_raw(bytes(self.batch), no_search=False, full_utt=False)
            self.fed += len(self.batch)
            self.batch.clear()

    def end(self) -> None:
        if not self.open:
            return
        self._flush()
        self.decoder.end_utt()
        self.open = False
        words = self.engine.words(self.decoder, self.start)
        self.segments.extend(_group(words, self.engine.SEGMENT_PAUSE, self.engine.SEGMENT_LONGEST))


_WORD_VARIANT = re.compile(r"\(\d+\)$")


def _is_word(token: str) -> bool:
    return not (token.startswith(("<", "[", "+")) or token in ("<s>", "</s>"))


def _group(words: list[tuple[str, float, float]], pause: float, longest: float) -> list[dict]:
    """Words into segments, cut at pauses and at a maximum length."""
    segments: list[dict] = []
    current: list[tuple[str, float, float]] = []

    def close():
        if current:
            segments.append({"start": _round(current[0][1]), "end": _round(current[-1][2]),
                             "text": " ".join(w for w, _, _ in current),
                             "words": [{"word": w, "start": _round(b), "end": _round(e)} for w, b, e in current]})
            current.clear()

    for word, begin, end in words:
        if not _is_word(word):
            if end - begin >= pause:
                close()
            continue
        if current and end - current[0][1] > longest:
            close()
        current.append((word, begin, end))
    close()
    return segments


# --- which engine a configuration means --------------------------------------------------------

LOCAL_ENGINES = ("faster-whisper", "pocketsphinx")


def spec(settings) -> dict:
    """What a child process needs to build the configured local engine: plain JSON. Resolving
    the model verifies its files (raises audio.models.ModelError)."""
    from audio.models import resolve

    if settings.engine == "pocketsphinx":
        return {"engine": "pocketsphinx", "label": "pocketsphinx"}
    models = settings.home / "models"
    return {"engine": "faster-whisper", "model": resolve(settings.whisper_model, models),
            "device": settings.device, "threads": os.cpu_count() or 1, "download_root": str(models),
            "label": f"faster-whisper/{settings.whisper_model}"}


def build(spec: dict) -> Engine:
    """The engine a spec describes, in this process."""
    if spec["engine"] == "pocketsphinx":
        return PocketsphinxEngine()
    if spec["engine"] == "faster-whisper":
        return WhisperEngine(spec["model"], spec["device"], spec["threads"], spec.get("download_root"))
    raise ValueError(f"unknown local engine {spec['engine']!r}")


# --- the child process ---------------------------------------------------------------------------

class RecognizerError(RuntimeError):
    """The recognizer process failed, died or stopped answering: a failed attempt (P4)."""


class _ThreadChild(threading.local):
    """The child process of one worker thread; it ends with the thread (the thread's local
    state is dropped then, and with it this object)."""

    child: subprocess.Popen | None = None
    folder: Path | None = None
    buffer: bytearray

    def __del__(self):
        if self.child is not None and self.child.poll() is None:
            self.child.kill()


class IsolatedEngine:
    """A local engine in a child process of its own, one per worker thread.

    A recognizer holds the interpreter lock while it decodes: in the worker's own process it
    would stall every other thread there (the HTTP API of `transcriber up`, other workers). In a
    child it does not, and two worker threads really decode in parallel. The model is loaded
    once per child. Every exchange has a deadline: a child that stops answering is killed, the
    run fails (and is counted), and the next run gets a new child, as does the run after one
    that died. While it waits the step keeps beating, so a lost claim or a stopping worker ends
    the wait at once (and the child, which would otherwise hold half a window).
    """

    START_SECONDS = 180.0              # loading a model on a loaded machine
    BASE_SECONDS = 60.0                # per window, plus PER_AUDIO_SECOND for each second of it
    PER_AUDIO_SECOND = 8.0
    POLL_SECONDS = 0.5

    def __init__(self, spec: dict, window_timeout_seconds: float | None = None):
        self.spec = spec
        self.name = spec["label"]
        self.window_timeout_seconds = window_timeout_seconds
        self._local = _ThreadChild()

    # the child of this thread ------------------------------------------------------------------
    def _child(self, beat: Beat) -> tuple[subprocess.Popen, Path]:
        child = self._local.child
        if child is not None and child.poll() is None:
            return child, self._local.folder
        if child is not None:
            logger.warning("recognizer process {} had ended (status {}); starting a new one",
                           child.pid, child.returncode)
            self._discard()
        root = str(Path(__file__).resolve().parent.parent)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        child = subprocess.Popen(
            [sys.executable, "-m", "audio.recognizer_process", json.dumps(self.spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
        )
        self._local.child, self._local.buffer = child, bytearray()
        self._local.folder = Path(tempfile.mkdtemp(prefix="transcriber-window-"))
        answer = self._answer(child, self.window_timeout_seconds or self.START_SECONDS, beat, "to load its model")
        if "error" in answer:
            self._discard()
            raise RecognizerError(f"the recognizer could not start: {answer['error']}")
        return child, self._local.folder

    def _discard(self) -> None:
        child = self._local.child
        self._local.child = None
        if child is not None:
            if child.poll() is None:
                child.kill()
            child.wait(timeout=30)
            for stream in (child.stdin, child.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        folder = self._local.folder
        self._local.folder = None
        if folder is not None:
            for path in folder.glob("*"):
                path.unlink(missing_ok=True)
            folder.rmdir()

    def _answer(self, child: subprocess.Popen, timeout: float, beat: Beat, doing: str) -> dict:
        """The child's next JSON line within `timeout` seconds; beats while it waits."""
        deadline = time.monotonic() + timeout
        buffer: bytearray = self._local.buffer
        fd = child.stdout.fileno()
        try:
            while b"\n" not in buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    logger.warning("recognizer process {} gave no answer {} within {:g}s; killed",
                                   child.pid, doing, timeout)
                    raise RecognizerError(f"the recognizer gave no answer {doing} within {timeout:g}s "
                                          "and was stopped")
                ready, _, _ = select.select([fd], [], [], min(self.POLL_SECONDS, left))
                if ready:
                    data = os.read(fd, 1 << 16)
                    if not data:
                        raise RecognizerError("the recognizer process ended unexpectedly")
                    buffer += data
                else:
                    beat()
        except BaseException:
            self._discard()  # a child that failed us, or that holds half a window, is not reused
            raise
        line, _, rest = bytes(buffer).partition(b"\n")
        buffer[:] = rest
        return json.loads(line)

    def recognize(self, pcm: bytes, language: str | None, beat: Beat = lambda *a: None) -> Recognized:
        child, folder = self._child(beat)
        window = folder / "window.pcm"
        window.write_bytes(pcm)
        request = json.dumps({"pcm": str(window), "language": language}).encode() + b"\n"
        try:
            child.stdin.write(request)  # a small line: never blocks, even on a stopped child
            child.stdin.flush()
        except OSError:
            self._discard()
            raise RecognizerError("the recognizer process ended unexpectedly") from None
        seconds = len(pcm) / BYTES_PER_SECOND
        timeout = self.window_timeout_seconds or self.BASE_SECONDS + self.PER_AUDIO_SECOND * seconds
        answer = self._answer(child, timeout, beat, f"for a {seconds:.0f}s window")
        if "error" in answer:
            raise RecognizerError(answer["error"])
        return Recognized(answer["segments"], answer.get("language"))

    @property
    def pid(self) -> int | None:
        """The process id of this thread's recognizer child, while one runs."""
        child = self._local.child
        return child.pid if child is not None and child.poll() is None else None

    def close(self) -> None:
        """End this thread's child (a worker thread that stops)."""
        self._discard()


_ENGINES: dict[str, object] = {}
_LOCK = threading.Lock()


def engine(settings):
    """The process's recognizer for the configured engine, made once: a local engine runs in a
    child process per worker thread; the remote one speaks HTTP from the worker itself. Its
    `recognize(pcm, language, beat)` recognises one window."""
    key = json.dumps([settings.engine, settings.whisper_model, settings.device, str(settings.home),
                      settings.openai_base_url, settings.recognizer_timeout_seconds])
    with _LOCK:
        if key not in _ENGINES:
            if settings.engine == "openai":
                _ENGINES[key] = _Remote(settings)
            else:
                _ENGINES[key] = IsolatedEngine(spec(settings), settings.recognizer_timeout_seconds)
        return _ENGINES[key]


class _Remote:
    """The remote engine behind the same call as the isolated ones."""

    def __init__(self, settings):
        from audio.remote import OpenAIEngine

        self.remote = OpenAIEngine(settings.openai_base_url, settings.openai_api_key, settings.openai_model)
        self.name = f"openai/{settings.openai_model}"

    def recognize(self, pcm: bytes, language: str | None, beat: Beat = lambda *a: None) -> Recognized:
        beat()
        result = self.remote.recognize(pcm, language)
        beat()
        return result
