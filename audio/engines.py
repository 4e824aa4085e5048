"""Recognition engines: PCM in (16 kHz mono s16), text and timed segments out."""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

from audio.decode import BYTES_PER_SECOND

Progress = Callable[[float], None]


@dataclass
class Transcript:
    text: str
    segments: list[dict] = field(default_factory=list)  # each {"start", "end", "text"} in seconds


class Engine(Protocol):
    name: str

    def transcribe(self, pcm: Iterable[bytes], progress: Progress) -> Transcript:
        """Recognise the PCM stream; call `progress(seconds_done)` as it goes."""


class PocketsphinxEngine:
    """The offline default: pocketsphinx with its bundled en-us model.

    Speech is cut into utterances by voice activity detection (and at most MAX_UTTERANCE
    seconds each), so memory stays bounded however long the audio. A decoder is not shareable
    between threads: each worker thread loads the model once and keeps it for every record.
    """

    name = "pocketsphinx"
    MAX_UTTERANCE = 15.0      # seconds of speech decoded at once
    SEGMENT_PAUSE = 0.3       # a pause this long ends a segment
    SEGMENT_LONGEST = 8.0     # and no segment runs longer

    _local = threading.local()

    def _decoder(self):
        decoder = getattr(self._local, "decoder", None)
        if decoder is None:
            from pocketsphinx import Decoder

            decoder = self._local.decoder = Decoder(loglevel="FATAL")
        return decoder

    def transcribe(self, pcm: Iterable[bytes], progress: Progress) -> Transcript:
        from pocketsphinx import Endpointer

        decoder = self._decoder()
        endpointer = Endpointer()
        frame_bytes = endpointer.frame_bytes
        longest = int(self.MAX_UTTERANCE * BYTES_PER_SECOND)
        segments: list[dict] = []
        speech = bytearray()          # the utterance being gathered
        start = 0.0                   # where it starts, in seconds
        continued: float | None = None  # start of the rest of an utterance cut at `longest`
        pending = bytearray()
        done = 0

        def gather(out: bytes | None, ended: bool) -> None:
            nonlocal start, continued
            if out is None:
                return
            if not speech:
                start = continued if continued is not None else endpointer.speech_start
                continued = None
            speech.extend(out)
            if ended or len(speech) >= longest:
                segments.extend(self._utterance(decoder, bytes(speech), start))
                continued = None if ended else start + len(speech) / BYTES_PER_SECOND
                speech.clear()

        for piece in pcm:
            pending += piece
            while len(pending) >= frame_bytes:
                out = endpointer.process(bytes(pending[:frame_bytes]))
                del pending[:frame_bytes]
                done += frame_bytes
                gather(out, not endpointer.in_speech)
                if done % BYTES_PER_SECOND < frame_bytes:  # about once a second of audio
                    progress(done / BYTES_PER_SECOND)
        if endpointer.in_speech:
            # end_stream wants a non-empty last frame: silence stands in when none is left
            gather(endpointer.end_stream(bytes(pending) or bytes(frame_bytes)), True)
        if speech:
            segments.extend(self._utterance(decoder, bytes(speech), start))
        progress((done + len(pending)) / BYTES_PER_SECOND)
        return Transcript(" ".join(s["text"] for s in segments), segments)

    def _utterance(self, decoder, pcm: bytes, start: float) -> list[dict]:
        decoder.start_utt()
        decoder.process_raw(pcm, no_search=False, full_utt=True)
        decoder.end_utt()
        frame_seconds = 1.0 / decoder.config["frate"]
        words = []
        for seg in decoder.seg():
            word = _WORD_VARIANT.sub("", seg.word)
            begin, end = start + seg.start_frame * frame_seconds, start + (seg.end_frame + 1) * frame_seconds
            words.append((word, begin, end))
        return _group(words, self.SEGMENT_PAUSE, self.SEGMENT_LONGEST)


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


_ENGINES: dict[str, Engine] = {}
_LOCK = threading.Lock()


def engine(name: str) -> Engine:
    """The process's engine called `name`, created once."""
    with _LOCK:
        if name not in _ENGINES:
            if name != PocketsphinxEngine.name:
                raise ValueError(f"unknown engine {name!r}")
            _ENGINES[name] = PocketsphinxEngine()
        return _ENGINES[name]
