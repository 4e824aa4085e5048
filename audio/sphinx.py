"""The light engine: pocketsphinx with its bundled en-us model, for the smallest machines.

Pocketsphinx hears no segments, only a stream of timed words and fillers. This module cuts the
window's speech into utterances by voice activity detection, feeds them to a decoder, and
groups the words it hears into transcript segments at pauses and at a longest length. Its
decoder adapts to the audio as it goes, so every window gets a new decoder: nothing one window
leaves reaches the next.
"""

from __future__ import annotations

import re

from audio.decode import BYTES_PER_SECOND
from audio.recognized import Recognized, not_translating, rounded_seconds

Word = tuple[str, float, float]  # (word, start, end), seconds from the window's start


class PocketsphinxEngine:
    """Pocketsphinx, English only. Speech is cut into utterances by voice activity detection (and
    at most MAX_UTTERANCE seconds each)."""

    name = "pocketsphinx"
    MAX_UTTERANCE = 15.0  # seconds of speech decoded at once
    SEGMENT_PAUSE = 0.3  # a pause this long ends a segment
    SEGMENT_LONGEST = 8.0  # and no segment runs longer

    def recognize(
        self, pcm: bytes, language: str | None, prompt: str | None = None, task: str = "transcribe"
    ) -> Recognized:
        """`prompt` is not used: pocketsphinx has no way to take one. It cannot translate."""
        not_translating(self.name, task)
        from pocketsphinx import Decoder, Endpointer  # the installed package, not this module

        utterance = _Utterance(Decoder(loglevel="FATAL"), self)
        endpointer = Endpointer()
        frame_bytes = endpointer.frame_bytes
        whole = len(pcm) - len(pcm) % frame_bytes
        for at in range(0, whole, frame_bytes):
            speech = endpointer.process(pcm[at : at + frame_bytes])
            if speech is not None:
                utterance.add(speech, endpointer.speech_start, ended=not endpointer.in_speech)
        if endpointer.in_speech:
            # end_stream wants a non-empty last frame: silence stands in when none is left
            speech = endpointer.end_stream(pcm[whole:] or bytes(frame_bytes))
            if speech is not None:
                utterance.add(speech, endpointer.speech_start, ended=True)
        utterance.end()
        return Recognized(utterance.segments, "en")

    def words(self, decoder, start: float) -> list[Word]:
        """The words of the utterance just ended, timed from the window's start."""
        frame_seconds = 1.0 / decoder.config["frate"]
        return [
            (
                _WORD_VARIANT.sub("", seg.word),
                start + seg.start_frame * frame_seconds,
                start + (seg.end_frame + 1) * frame_seconds,
            )
            for seg in decoder.seg()
        ]


class _Utterance:
    """Speech fed to the decoder in quarter-second batches; an utterance is cut at
    MAX_UTTERANCE seconds."""

    BATCH_BYTES = BYTES_PER_SECOND // 4

    def __init__(self, decoder, engine: PocketsphinxEngine):
        self.decoder, self.engine = decoder, engine
        self.segments: list[dict] = []
        self.open = False
        self.start: float | None = None  # where the open utterance starts, in seconds
        self.fed_bytes = 0
        self.batch = bytearray()
        self.longest_bytes = int(engine.MAX_UTTERANCE * BYTES_PER_SECOND)

    def add(self, speech: bytes, speech_start: float, *, ended: bool) -> None:
        if not self.open:
            self.decoder.start_utt()
            self.open, self.fed_bytes = True, 0
            self.start = speech_start if self.start is None else self.start
        self.batch += speech
        if len(self.batch) >= self.BATCH_BYTES or ended:
            self._flush()
        if ended:
            self.end()
            self.start = None
        elif self.fed_bytes >= self.longest_bytes:
            cut_at = self._started() + self.fed_bytes / BYTES_PER_SECOND
            self.end()
            self.start = cut_at  # the rest of this stretch of speech goes on from here

    def _started(self) -> float:
        """Where the open utterance starts: set whenever one is open."""
        if self.start is None:
            raise RuntimeError("no utterance is open")
        return self.start

    def _flush(self) -> None:
        if self.batch:
            self.decoder.process_raw(bytes(self.batch), no_search=False, full_utt=False)
            self.fed_bytes += len(self.batch)
            self.batch.clear()

    def end(self) -> None:
        if not self.open:
            return
        self._flush()
        self.decoder.end_utt()
        self.open = False
        words = self.engine.words(self.decoder, self._started())
        self.segments.extend(_into_segments(words, self.engine.SEGMENT_PAUSE, self.engine.SEGMENT_LONGEST))


_WORD_VARIANT = re.compile(r"\(\d+\)$")  # "read(2)": the dictionary's second pronunciation of "read"


def _is_word(token: str) -> bool:
    """Whether a decoded token is a word, not silence (<s>, </s>, <sil>) or noise ([NOISE], [SPEECH])."""
    return not (token.startswith(("<", "[", "+")) or token in ("<s>", "</s>"))


def _into_segments(words: list[Word], pause: float, longest: float) -> list[dict]:
    """Words into segments, cut at pauses and at a maximum length."""
    segments: list[dict] = []
    open_segment: list[Word] = []  # the words of the segment being filled

    def close_segment():
        if open_segment:
            segments.append(
                {
                    "start": rounded_seconds(open_segment[0][1]),
                    "end": rounded_seconds(open_segment[-1][2]),
                    "text": " ".join(w for w, _, _ in open_segment),
                    "words": [
                        {"word": w, "start": rounded_seconds(b), "end": rounded_seconds(e)} for w, b, e in open_segment
                    ],
                }
            )
            open_segment.clear()

    for word, begin, end in words:
        if not _is_word(word):
            if end - begin >= pause:
                close_segment()
            continue
        if open_segment and end - open_segment[0][1] > longest:
            close_segment()
        open_segment.append((word, begin, end))
    close_segment()
    return segments
