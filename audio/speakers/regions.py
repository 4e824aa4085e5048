"""Where someone speaks: faster-whisper's Silero VAD over 16 kHz mono float samples."""

from __future__ import annotations

import numpy as np

from audio.decode import SAMPLE_RATE

# Short silences split regions, so a change of speaker across a short pause becomes a boundary;
# a little padding keeps word onsets inside.
MIN_SILENCE_MS = 300
SPEECH_PAD_MS = 60
MIN_SPEECH_MS = 200


def speech_regions(samples: np.ndarray) -> list[tuple[float, float]]:
    """(start, end) in seconds of each stretch of speech in `samples`."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    options = VadOptions(
        min_silence_duration_ms=MIN_SILENCE_MS, speech_pad_ms=SPEECH_PAD_MS, min_speech_duration_ms=MIN_SPEECH_MS
    )
    stamps = get_speech_timestamps(samples, options, sampling_rate=SAMPLE_RATE)
    return [(stamp["start"] / SAMPLE_RATE, stamp["end"] / SAMPLE_RATE) for stamp in stamps]
