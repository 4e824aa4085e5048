"""Recordings the benchmarks feed the service, made with PyAV from 16 kHz mono PCM: the bundled
speech sample (repeated to a length, or cut short), or any run of pieces one after another.
Encoded as they come, so that a recording of hours is never all in memory."""
from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path

import av
import numpy as np

from audio.decode import SAMPLE_RATE, pcm16k
from bench.common import ROOT

SAMPLE = ROOT / "transcriber" / "samples" / "hello.ogg"

# kind: container format, audio codec, sample rate (a usual one for the codec, so that the
# conversion the benchmarks time includes a resampling, as a user's upload does)
KINDS = {
    "mp3": ("mp3", "libmp3lame", 44100),
    "flac": ("flac", "flac", 22050),
    "opus": ("ogg", "libopus", 48000),
}
FRAME = 960  # samples handed to the encoder at a time (PyAV cuts them to the codec's frames)


@cache
def sample_pcm() -> bytes:
    """The bundled speech sample as 16 kHz mono s16 PCM."""
    return b"".join(pcm16k(SAMPLE))


def write(path: Path, pieces: Iterable[bytes | np.ndarray], kind: str, bit_rate: int | None = None) -> float:
    """Encode `pieces` of 16 kHz mono s16 PCM (bytes or int16 arrays), one after another, into
    `path` as `kind`; the seconds written."""
    fmt, codec, rate = KINDS[kind]
    written = 0
    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream(codec, rate=rate, layout="mono")
        if bit_rate:
            stream.bit_rate = bit_rate
        resampler = av.AudioResampler(format=stream.codec_context.format, layout="mono", rate=rate)
        fifo = av.AudioFifo()
        for piece in pieces:
            samples = np.frombuffer(piece, dtype=np.int16)
            written += len(samples)
            frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
            frame.rate = SAMPLE_RATE
            for resampled in resampler.resample(frame):
                fifo.write(resampled)
            while fifo.samples >= FRAME:
                out.mux(stream.encode(fifo.read(FRAME)))
        for resampled in resampler.resample(None):
            fifo.write(resampled)
        while frame := fifo.read(FRAME, partial=True):
            frame.pts = None
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))
    return written / SAMPLE_RATE


def sample_recording(path: Path, kind: str, repeat: int = 1) -> Path:
    """The speech sample `repeat` times over, written to `path` as `kind`."""
    write(path, [sample_pcm()] * repeat, kind)
    return path
