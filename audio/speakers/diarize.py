"""The whole of diarization for audio in memory: regions, embeddings, clusters, turns.

The pipeline's step does the same in pieces (embeddings window by window, saved as it goes;
clustering once at the end); this is the one-call form for tests, the benchmark and the CLI.
"""
from __future__ import annotations

import numpy as np

from audio.speakers.assign import Turn, turns
from audio.speakers.cluster import cluster
from audio.speakers.embed import Embeddings, embed
from audio.speakers.regions import speech_regions


def embeddings(samples: np.ndarray, offset: float = 0.0, threads: int = 1) -> Embeddings:
    """The embeddings of the speech in `samples` (16 kHz mono float), timed from `offset`."""
    return embed(samples, speech_regions(samples), offset, threads)


def speaker_turns(found: Embeddings, speakers: int | None = None) -> list[Turn]:
    """Turns from the embeddings of a whole recording; `speakers` fixes their number."""
    return turns(found.times, cluster(found.vectors, speakers))


def diarize(samples: np.ndarray, speakers: int | None = None, threads: int = 1) -> list[Turn]:
    """Who spoke when in `samples` (16 kHz mono float in [-1, 1])."""
    return speaker_turns(embeddings(samples, threads=threads), speakers)
