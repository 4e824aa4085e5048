"""Decoding: any container/codec FFmpeg knows, streamed into 16 kHz mono signed 16-bit PCM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import av
from av.codec.context import ThreadType

from domain.errors import TranscriberError

SAMPLE_RATE = 16000
BYTES_PER_SECOND = SAMPLE_RATE * 2
PCM_MEDIA_TYPE = "audio/L16;rate=16000;channels=1"


# Stream parameters no recording has: a "1 Hz" WAV of a few kB expands to hours of 16 kHz audio
# (a decompression bomb), so such streams are refused before anything is decoded or stored.
MIN_SAMPLE_RATE = 1000
MAX_SAMPLE_RATE = 768_000
MAX_CHANNELS = 64


class UndecodableAudio(TranscriberError, code="undecodable_audio"):
    """The input holds no audio that can be decoded; retrying cannot help."""


class UnsupportedStream(UndecodableAudio, code="unsupported_audio"):
    """The audio stream's parameters are absurd (a sample rate of a few Hz, hundreds of channels)."""


class TooLong(TranscriberError, code="audio_too_long"):
    """The audio lasts longer than the cap (TRANSCRIBER_MAX_AUDIO_SECONDS): declared so, or found
    so while decoding, which then stops at the cap."""

    def __init__(self, seconds: float, limit: float, declared: bool):
        if declared:
            what = f"the recording lasts {seconds:.0f}s, longer than the limit of {limit:g}s"
        else:
            what = f"the recording decodes to more than the limit of {limit:g}s; decoding stopped there"
        super().__init__(f"{what} (TRANSCRIBER_MAX_AUDIO_SECONDS)")
        self.seconds, self.limit, self.declared = seconds, limit, declared


def check_stream(sample_rate: int | None, channels: int | None) -> None:
    """Refuse stream parameters no recording has (UnsupportedStream); unknown ones pass."""
    if sample_rate and not MIN_SAMPLE_RATE <= sample_rate <= MAX_SAMPLE_RATE:
        raise UnsupportedStream(
            f"a sample rate of {sample_rate} Hz is not supported ({MIN_SAMPLE_RATE}-{MAX_SAMPLE_RATE} Hz)"
        )
    if channels and channels > MAX_CHANNELS:
        raise UnsupportedStream(f"{channels} channels are not supported (at most {MAX_CHANNELS})")


def _check_frame(frame: av.AudioFrame) -> None:
    check_stream(frame.sample_rate, len(frame.layout.channels))


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


def probe(path: Path, max_seconds: float | None = None) -> float | None:
    """Check that `path` holds a decodable audio stream; its declared duration in seconds where
    known.

    Decodes the first audio frame, so a file whose header looks right but whose audio cannot
    be decoded is refused too. Absurd stream parameters raise UnsupportedStream; a declared
    duration over `max_seconds` raises TooLong. A declaration may lie: `pcm16k` holds the cap.
    """
    container = _open(path)
    try:
        stream = container.streams.audio[0]
        check_stream(stream.codec_context.sample_rate, stream.codec_context.channels)
        for frame in container.decode(stream):
            if frame.samples:
                _check_frame(frame)
                break
        else:
            raise UndecodableAudio("the audio stream holds no samples")
        seconds = None
        if container.duration:
            seconds = container.duration / av.time_base
        elif stream.duration and stream.time_base:
            seconds = float(stream.duration * stream.time_base)
        if seconds is not None and max_seconds is not None and seconds > max_seconds:
            raise TooLong(seconds, max_seconds, declared=True)
        return seconds
    except av.error.FFmpegError as error:
        raise UndecodableAudio(f"cannot decode audio: {_message(error)}") from None
    finally:
        container.close()


def pcm16k(path: Path, piece_bytes: int = BYTES_PER_SECOND * 4, max_seconds: float | None = None) -> Iterator[bytes]:
    """Decode the first audio stream of `path` to 16 kHz mono s16 PCM, in pieces.

    Memory stays flat with the file's length: frames are resampled and handed on as they come.
    Raises UndecodableAudio when there is no stream, no sample, or the decoder gives up, and
    UnsupportedStream for absurd stream parameters. Decoding stops with TooLong as soon as the
    audio would pass `max_seconds`, whatever the file declared: nothing past the cap is handed on.
    """
    container = _open(path)
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    buffer = bytearray()
    produced = 0
    limit = None if max_seconds is None else round(max_seconds * SAMPLE_RATE) * 2
    try:
        stream = container.streams.audio[0]
        check_stream(stream.codec_context.sample_rate, stream.codec_context.channels)
        stream.codec_context.thread_type = ThreadType.AUTO
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
            if frame is not None:
                _check_frame(frame)
            for out in resampler.resample(frame):
                buffer += bytes(out.planes[0])[: out.samples * 2]
            if limit is not None and max_seconds is not None and produced + len(buffer) > limit:
                raise TooLong((produced + len(buffer)) / BYTES_PER_SECOND, max_seconds, declared=False)
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
