"""Recognition engines: PCM in (16 kHz mono s16), text and timed segments out."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

from audio.decode import BYTES_PER_SECOND

Progress = Callable[[float], None]


@dataclass
class Transcript:
    text: str
    segments: list[dict] = field(default_factory=list)  # each {"start", "end", "text"} in seconds


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

    def transcribe(self, pcm: Iterable[bytes], progress: Progress) -> Transcript:
        """Recognise the PCM stream; call `progress(seconds_done)` as it goes."""


class PocketsphinxEngine:
    """The offline default: pocketsphinx with its bundled en-us model.

    Speech is cut into utterances by voice activity detection (and at most MAX_UTTERANCE
    seconds each) and fed to the decoder as it comes, so memory stays bounded however long the
    audio. The model is loaded once per engine and kept for every recording; an engine serves
    one recording at a time (workers reach it through `IsolatedEngine`).
    """

    name = "pocketsphinx"
    MAX_UTTERANCE = 15.0      # seconds of speech decoded at once
    SEGMENT_PAUSE = 0.3       # a pause this long ends a segment
    SEGMENT_LONGEST = 8.0     # and no segment runs longer

    def __init__(self):
        self._loaded = None

    def _decoder(self):
        if self._loaded is None:
            from pocketsphinx import Decoder

            self._loaded = Decoder(loglevel="FATAL")
        return self._loaded

    def transcribe(self, pcm: Iterable[bytes], progress: Progress) -> Transcript:
        from pocketsphinx import Endpointer

        utterance = _Utterance(self._decoder(), self)
        endpointer = Endpointer()
        frame_bytes = endpointer.frame_bytes
        pending = bytearray()
        done = 0
        for piece in pcm:
            pending += piece
            while len(pending) >= frame_bytes:
                speech = endpointer.process(bytes(pending[:frame_bytes]))
                del pending[:frame_bytes]
                done += frame_bytes
                if speech is not None:
                    utterance.add(speech, endpointer.speech_start, ended=not endpointer.in_speech)
                if done % BYTES_PER_SECOND < frame_bytes:  # about once a second of audio
                    progress(done / BYTES_PER_SECOND)
        if endpointer.in_speech:
            # end_stream wants a non-empty last frame: silence stands in when none is left
            speech = endpointer.end_stream(bytes(pending) or bytes(frame_bytes))
            if speech is not None:
                utterance.add(speech, endpointer.speech_start, ended=True)
        utterance.end()
        progress((done + len(pending)) / BYTES_PER_SECOND)
        return Transcript(" ".join(s["text"] for s in utterance.segments), utterance.segments)

    def words(self, decoder, start: float) -> list[tuple[str, float, float]]:
        """The words of the utterance just ended, timed from the audio's start."""
        frame_seconds = 1.0 / decoder.config["frate"]
        return [(_WORD_VARIANT.sub("", seg.word), start + seg.start_frame * frame_seconds,
                 start + (seg.end_frame + 1) * frame_seconds) for seg in decoder.seg()]


class _Utterance:
    """Speech fed to the decoder as it comes, in quarter-second batches, so no utterance is
    held whole in memory. An utterance is cut at MAX_UTTERANCE seconds."""

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
            segments.append({"start": round(current[0][1], 2), "end": round(current[-1][2], 2),
                             "text": " ".join(w for w, _, _ in current)})
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


class IsolatedEngine:
    """An engine run in a child process of its own, one per worker thread.

    A recognizer holds the interpreter lock while it decodes: run in the worker's own process
    it would stall every other thread there (the HTTP API of `transcriber up`, the other
    workers). In a child process it does not, and two worker threads really decode in
    parallel. The model is loaded once per child, which lives as long as its thread. PCM goes
    down a pipe whose small buffer keeps the parent's count of bytes sent within a moment of
    the child's progress; a step that stops early (claim lost, shutdown) ends the child, which
    would otherwise hold half an utterance.
    """

    def __init__(self, name: str):
        self.name = name
        self._local = threading.local()

    def _child(self) -> subprocess.Popen:
        child = getattr(self._local, "child", None)
        if child is None or child.poll() is not None:
            root = str(Path(__file__).resolve().parent.parent)
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
            child = self._local.child = subprocess.Popen(
                [sys.executable, "-m", "audio.recognizer_process", self.name],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
            )
        return child

    def _discard(self) -> None:
        child = getattr(self._local, "child", None)
        self._local.child = None
        if child is not None:
            child.kill()
            child.wait(timeout=5)
            for stream in (child.stdin, child.stdout):
                stream.close()

    def transcribe(self, pcm: Iterable[bytes], progress: Progress) -> Transcript:
        child = self._child()
        sent = 0
        try:
            for piece in pcm:
                for at in range(0, len(piece), PIPE_PIECE):
                    chunk = piece[at:at + PIPE_PIECE]
                    write_frame(child.stdin, chunk)
                    sent += len(chunk)
                    progress(sent / BYTES_PER_SECOND)
            write_frame(child.stdin, b"")  # the end of this recording
            answer = child.stdout.readline()
            if not answer:
                raise EOFError
        except (EOFError, OSError):
            self._discard()
            raise RuntimeError(f"the {self.name} recognizer process ended unexpectedly") from None
        except BaseException:
            self._discard()
            raise
        result = json.loads(answer)
        if "error" in result:
            raise RuntimeError(result["error"])
        return Transcript(result["text"], result["segments"])


PIPE_PIECE = BYTES_PER_SECOND // 2


def write_frame(stream, data: bytes) -> None:
    stream.write(len(data).to_bytes(4, "big") + data)
    stream.flush()


def read_frame(stream) -> bytes | None:
    """The next frame; None at the end of the stream."""
    head = stream.read(4)
    if len(head) < 4:
        return None
    size = int.from_bytes(head, "big")
    data = bytearray()
    while len(data) < size:
        more = stream.read(size - len(data))
        if not more:
            return None
        data += more
    return bytes(data)


# The engines there are, by the name TRANSCRIBER_ENGINE gives.
ENGINES = {PocketsphinxEngine.name: PocketsphinxEngine}


def make(name: str) -> Engine:
    """A new engine called `name`, in this process."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}")
    return ENGINES[name]()


_ISOLATED: dict[str, IsolatedEngine] = {}
_LOCK = threading.Lock()


def engine(name: str) -> Engine:
    """The process's engine called `name`, created once; it recognises in child processes."""
    with _LOCK:
        if name not in _ISOLATED:
            if name not in ENGINES:
                raise ValueError(f"unknown engine {name!r}")
            _ISOLATED[name] = IsolatedEngine(name)
        return _ISOLATED[name]
