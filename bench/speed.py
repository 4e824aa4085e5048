"""Conversion and recognition speed, and memory, by audio length. Prints a table.

    .venv/bin/python -m bench.speed [SECONDS ...]     (default: 10 60 300)

The engine is the configured one (TRANSCRIBER_ENGINE, TRANSCRIBER_WHISPER_MODEL), fed window
by window as the pipeline feeds it. Speed is audio seconds per wall second on this machine;
memory is the process's peak resident size (decoder and recognizer in one process), which must
stay flat as the audio grows.
"""
from __future__ import annotations

import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

from audio.decode import BYTES_PER_SECOND, pcm16k
from audio.engines import build, spec
from audio.windows import windows
from bench.recordings import sample_pcm, sample_recording
from service import config


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: str) -> tuple[float, float, float, float]:
    """In a fresh process: audio seconds, conversion and recognition time, peak memory."""
    started = time.perf_counter()
    pcm = sum(len(piece) for piece in pcm16k(Path(path)))
    convert = time.perf_counter() - started
    settings = config.load()
    recognizer = build(spec(settings))
    language = None if settings.language == "auto" else settings.language
    started = time.perf_counter()
    for _, window in windows(pcm16k(Path(path))):
        recognizer.recognize(window, language)
    recognize = time.perf_counter() - started
    return pcm / BYTES_PER_SECOND, convert, recognize, peak_mb()


def main(lengths: list[int]) -> None:
    sample_seconds = len(sample_pcm()) / BYTES_PER_SECOND
    settings = config.load()
    print(f"engine: {settings.engine} ({settings.whisper_model})")
    print(f"{'audio s':>8} {'convert x':>10} {'recognize x':>12} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as folder, multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
        for seconds in lengths:
            repeat = max(1, round(seconds / sample_seconds))
            path = sample_recording(Path(folder) / f"{seconds}.mp3", "mp3", repeat=repeat)
            audio, convert, recognize, peak = pool.apply(measure, (str(path),))
            print(f"{audio:8.0f} {audio / convert:10.0f} {audio / recognize:12.1f} {peak:12.0f}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [10, 60, 300])
