"""Real audio for tests, made with PyAV from the bundled speech sample: every container and codec
the pipeline claims to take, longer recordings, and broken inputs."""
from __future__ import annotations

from functools import cache
from pathlib import Path

import av
import numpy as np

from audio.decode import pcm16k

SAMPLE = Path(__file__).resolve().parent.parent / "transcriber" / "samples" / "hello.ogg"

# container format, audio codec, sample rate, file suffix
KINDS = {
    "wav": ("wav", "pcm_s16le", 16000, ".wav"),
    "mp3": ("mp3", "libmp3lame", 44100, ".mp3"),
    "opus": ("ogg", "libopus", 48000, ".opus"),
    "flac": ("flac", "flac", 22050, ".flac"),
    "m4a": ("ipod", "aac", 44100, ".m4a"),
    "webm": ("webm", "libopus", 48000, ".webm"),
}


@cache
def speech_pcm() -> bytes:
    return b"".join(pcm16k(SAMPLE))


def write_audio(out, samples: np.ndarray, codec: str, rate: int, layout: str = "mono") -> None:
    """Encode 16 kHz mono s16 `samples` into a new audio stream of `out` at `rate` in `layout`."""
    stream = out.add_stream(codec, rate=rate, layout=layout)
    resampler = av.AudioResampler(format=stream.codec_context.format, layout=layout, rate=rate)
    fifo = av.AudioFifo()
    source = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
    source.rate = 16000
    for frame in resampler.resample(source) + resampler.resample(None):
        fifo.write(frame)
    size = stream.codec_context.frame_size or 1024
    while frame := fifo.read(size, partial=True):
        frame.pts = None
        out.mux(stream.encode(frame))
    out.mux(stream.encode(None))


def encode(path: Path, kind: str = "wav", repeat: int = 1, video: bool = False, seconds: float | None = None) -> Path:
    """Write the sample speech (repeated `repeat` times, or only its first `seconds`) to `path` as `kind`."""
    fmt, codec, rate, _ = KINDS[kind]
    pcm = speech_pcm() * repeat
    if seconds is not None:
        pcm = pcm[:int(seconds * 16000) * 2]
    samples = np.frombuffer(pcm, dtype=np.int16).reshape(1, -1)
    with av.open(str(path), "w", format=fmt) as out:
        if video:
            picture = out.add_stream("mpeg4", rate=5)
            picture.width, picture.height, picture.pix_fmt = 64, 48, "yuv420p"
        write_audio(out, samples, codec, rate)
        if video:
            seconds = samples.shape[1] / 16000
            for i in range(int(seconds * 5)):
                image = av.VideoFrame.from_ndarray(np.full((48, 64, 3), i % 255, np.uint8), format="rgb24")
                out.mux(picture.encode(image.reformat(format="yuv420p")))
            out.mux(picture.encode(None))
    return path
