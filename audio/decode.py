"""Decoding: any container/codec FFmpeg knows, streamed into 16 kHz mono signed 16-bit PCM."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import av

SAMPLE_RATE = 16000
BYTES_PER_SECOND = SAMPLE_RATE * 2
PCM_MEDIA_TYPE = "audio/L16;rate=16000;channels=1"


class UndecodableAudio(Exception):
    """The input holds no audio that can be decoded; retrying cannot help."""


def _message(error: Exception) -> str:
    """The decoder's own words, without the local temporary path it names."""
    return getattr(error, "strerror", None) or str(error)


def _open(path: Path) -> av.container.InputContainer:
    try:
        container = av.open(str(path), mode="r")
    except (av.error.FFmpegError, UnicodeDecodeError, ValueError) as error:
        raise UndecodableAudio(f"cannot open as audio: {_message(error)}") from None
    if not container.streams.audio:
        container.close()
        raise UndecodableAudio("the file has no audio stream")
    return container


def probe(path: Path) -> float | None:
    """Check that `path` holds a decodable audio stream; its duration in seconds where known.

    Decodes the first audio frame, so a file whose header looks right but whose audio cannot
    be decoded is refused too.
    """
    container = _open(path)
    try:
        stream = container.streams.audio[0]
        for frame in container.decode(stream):
            if frame.samples:
                break
        else:
            raise UndecodableAudio("the audio stream holds no samples")
        if container.duration:
            return container.duration / av.time_base
        if stream.duration and stream.time_base:
            return float(stream.duration * stream.time_base)
        return None
    except av.error.FFmpegError as error:
        raise UndecodableAudio(f"cannot decode audio: {_message(error)}") from None
    finally:
        container.close()


def pcm16k(path: Path, piece_bytes: int = BYTES_PER_SECOND * 4) -> Iterator[bytes]:
    """Decode the first audio stream of `path` to 16 kHz mono s16 PCM, in pieces.

    Memory stays flat with the file's length: frames are resampled and handed on as they come.
    Raises UndecodableAudio when there is no stream, no sample, or the decoder gives up.
    """
    container = _open(path)
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    buffer = bytearray()
    produced = 0
    try:
        stream = container.streams.audio[0]
        stream.thread_type = "AUTO"
        frames = container.decode(stream)
        while True:
            try:
                frame = next(frames)
            except StopIteration:
                frame = None
            except av.error.FFmpegError as error:
                if produced or buffer:
                    # a damaged tail: keep what decoded, as players do
                    frame = None
                else:
                    raise UndecodableAudio(f"cannot decode audio: {_message(error)}") from None
            for out in resampler.resample(frame):
                buffer += bytes(out.planes[0])[: out.samples * 2]
            while len(buffer) >= piece_bytes:
                produced += piece_bytes
                yield bytes(buffer[:piece_bytes])
                del buffer[:piece_bytes]
            if frame is None:
                break
        if buffer:
            produced += len(buffer)
            yield bytes(buffer)
        if produced == 0:
            raise UndecodableAudio("the audio stream holds no samples")
    finally:
        container.close()
