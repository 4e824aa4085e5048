"""The whole of diarization in one call: regions, embeddings, clusters, turns.

Audio is taken as a stream of 16 kHz mono s16 PCM and worked one recognition window
(audio.windows: at most 30 s, cut at a quiet moment) at a time, so memory holds one window of
audio and the embeddings (768 bytes per 0.75 s of speech), never the recording. A pipeline step
can do the same in pieces: `window_embeddings` per window as it goes, `speaker_turns` once at
the end.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from audio.speakers.assign import Turn, turns
from audio.speakers.cluster import cluster
from audio.speakers.embed import Embeddings, embed
from audio.speakers.regions import speech_regions
from audio.windows import windows


def window_embeddings(pcm: bytes, offset: float = 0.0, threads: int = 1) -> Embeddings:
    """The embeddings of the speech in one window of s16 PCM that starts at `offset` seconds."""
    samples = np.frombuffer(pcm, np.int16).astype(np.float32) / 32768.0
    return embed(samples, speech_regions(samples), offset, threads)


def speaker_turns(found: Embeddings, speakers: int | None = None) -> list[Turn]:
    """Turns from the embeddings of a whole recording; `speakers` fixes their number."""
    return turns(found.times, cluster(found.vectors, speakers))


def pcm_embeddings(pcm: Iterable[bytes], threads: int = 1) -> Embeddings:
    """The embeddings of a stream of 16 kHz mono s16 PCM, worked one window at a time."""
    return Embeddings.joined([window_embeddings(piece, at, threads) for at, piece in windows(pcm)])


def diarize_pcm(pcm: Iterable[bytes], speakers: int | None = None, threads: int = 1) -> list[Turn]:
    """Who spoke when in a stream of 16 kHz mono s16 PCM."""
    return speaker_turns(pcm_embeddings(pcm, threads), speakers)


def diarize(samples: np.ndarray, speakers: int | None = None, threads: int = 1) -> list[Turn]:
    """Who spoke when in `samples` (16 kHz mono float in [-1, 1])."""
    pcm = (np.clip(samples, -1.0, 1.0) * 32767).astype(np.int16)
    step = 1 << 19
    return diarize_pcm((pcm[i : i + step].tobytes() for i in range(0, len(pcm), step)), speakers, threads)
