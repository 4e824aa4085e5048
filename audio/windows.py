"""Recognition windows: converted PCM cut into pieces of at most WINDOW_SECONDS, each cut at the
quietest moment near its end, so no word is split and no recogniser ever holds a whole file.

The cuts depend only on the audio from a window's start onward. A run that resumes from a
checkpoint (a window boundary) therefore cuts the rest exactly as an uninterrupted run would,
and recognises the same windows to the same text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from audio.decode import BYTES_PER_SECOND, SAMPLE_RATE

WINDOW_SECONDS = 30.0  # Whisper's own input length; no window is longer
SEARCH_SECONDS = 6.0  # the cut is sought in the last seconds of a full window
FRAME_SECONDS = 0.05  # loudness is compared over frames this long

WINDOW_BYTES = int(WINDOW_SECONDS * BYTES_PER_SECOND)
_FRAME_SAMPLES = int(FRAME_SECONDS * SAMPLE_RATE)


def quietest_cut(window: bytes) -> int:
    """Where to cut a full window, in bytes: the start of its quietest frame among the last
    SEARCH_SECONDS (the earliest one on a tie, so the choice is stable)."""
    samples = np.frombuffer(window, dtype=np.int16)
    frames = len(samples) // _FRAME_SAMPLES
    first = max(1, frames - int(SEARCH_SECONDS / FRAME_SECONDS))
    tail = samples[first * _FRAME_SAMPLES : frames * _FRAME_SAMPLES].astype(np.int64)
    energy = (tail.reshape(-1, _FRAME_SAMPLES) ** 2).sum(axis=1)
    return (first + int(np.argmin(energy))) * _FRAME_SAMPLES * 2


def windows(pcm: Iterable[bytes], start_seconds: float = 0.0) -> Iterator[tuple[float, bytes]]:
    """(start in seconds, PCM bytes) for each window of the stream, which begins at `start_seconds`
    of the recording. Memory stays at about one window however long the audio."""
    at = round(start_seconds * SAMPLE_RATE)  # in samples: exact, whatever float the seconds were
    buffer = bytearray()
    for piece in pcm:
        buffer += piece
        while len(buffer) > WINDOW_BYTES:
            cut = quietest_cut(bytes(buffer[:WINDOW_BYTES]))
            yield at / SAMPLE_RATE, bytes(buffer[:cut])
            at += cut // 2
            del buffer[:cut]
    if len(buffer) >= 2:
        yield at / SAMPLE_RATE, bytes(buffer[: len(buffer) // 2 * 2])


def end_of(at: float, window: bytes) -> float:
    """Where a window that starts at `at` ends, in seconds: counted in whole samples, so it is
    exactly the start of the next window (a checkpoint must meet the next window's start)."""
    return (round(at * SAMPLE_RATE) + len(window) // 2) / SAMPLE_RATE


def start_byte(seconds: float) -> int:
    """The byte offset in converted PCM of a checkpoint at `seconds`."""
    return round(seconds * SAMPLE_RATE) * 2
