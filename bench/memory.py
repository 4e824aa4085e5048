"""Peak memory of the main job on a long recording: `transcriber transcribe` on a file of real
speech and pauses, as a user runs it. Prints a table.

    TRANSCRIBER_DATABASE_URL=postgresql://… .venv/bin/python -m bench.memory [--minutes 120]
        [--speech bench|sample] [--keep PATH]

The recording is built with PyAV: the English recordings of the accuracy benchmark
(bench/data.py, `--speech bench`) or the bundled sample (`--speech sample`, nothing to fetch),
one after another with pauses of 0.5 to 3 s between them, over and over to `--minutes`, encoded
as Ogg Opus. The command runs the whole path (intake, conversion to PCM in the database,
windowed recognition in its recognizer child process) in a scratch database on
TRANSCRIBER_DATABASE_URL's server, with the configured engine (TRANSCRIBER_ENGINE,
TRANSCRIBER_WHISPER_MODEL). Every SAMPLE_SECONDS the resident size of each process in the
command's tree is read from /proc (psutil); the peak of their sum is the figure (a database
server outside the tree is not counted; an embedded one is shown on its own line). RSS counts
the libraries both processes map once in each; PSS shares such pages out between them, so the
peak PSS sum is what the tree really holds. Also shown: each role's peak RSS, wall time, and
CPU seconds of the tree per audio second.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

from audio.decode import SAMPLE_RATE, pcm16k
from bench.common import ROOT
from bench.recordings import sample_pcm, write

SAMPLE_SECONDS = 0.5


def speech(kind: str) -> list[bytes]:
    """The recordings the long file is made of, as 16 kHz mono s16 PCM."""
    if kind == "sample":
        return [sample_pcm()]
    from bench import data

    return [b"".join(pcm16k(Path(u.path))) for u in data.prepare()["en"]]


def with_pauses(pieces: list[bytes], minutes: float):
    """The pieces over and over, each followed by a pause of 0.5 to 3 s, to `minutes` in all."""
    rng = np.random.default_rng(2)  # the same pauses every time
    total = int(minutes * 60 * SAMPLE_RATE)
    written = number = 0
    while written < total:
        pause = np.zeros(int(rng.uniform(0.5, 3.0) * SAMPLE_RATE), dtype=np.int16)
        samples = np.concatenate([np.frombuffer(pieces[number % len(pieces)], dtype=np.int16), pause])
        samples = samples[: total - written]
        number += 1
        written += len(samples)
        yield samples


def build(path: Path, minutes: float, kind: str) -> float:
    """Write the long recording to `path` (Ogg Opus, streamed: never all in memory); its seconds."""
    return write(path, with_pauses(speech(kind), minutes), "opus", bit_rate=32000)


def role(process: psutil.Process) -> str:
    try:
        line = " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "gone"
    if "audio.recognizer_process" in line:
        return "recognizer"
    if "postgres" in process.name() or "postgres" in line.split(" ")[0]:
        return "embedded database"
    return "worker"


def run(path: Path, env: dict) -> dict:
    """`transcriber transcribe PATH`, watched: peak RSS in MB (the tree, and each role's own
    peak), wall seconds, CPU seconds of the tree."""
    command = [sys.executable, "-m", "transcriber.cli", "transcribe", str(path)]
    started = time.monotonic()
    log = tempfile.TemporaryFile("w+")  # its progress lines: a pipe nobody reads could fill up
    top = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log, text=True)
    watched = psutil.Process(top.pid)
    peak = {"tree": 0.0, "tree PSS": 0.0}
    cpu: dict[int, float] = {}  # last CPU seconds seen per process
    while top.poll() is None:
        try:
            tree = [watched] + watched.children(recursive=True)
        except psutil.NoSuchProcess:
            break
        sizes: dict[str, float] = {}
        shared_fairly = 0.0
        for process in tree:
            try:
                memory = process.memory_full_info()
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            rss = memory.rss / 2**20
            cpu[process.pid] = times.user + times.system
            name = role(process)
            sizes[name] = sizes.get(name, 0.0) + rss
            if name != "embedded database":
                shared_fairly += memory.pss / 2**20
        for name, size in sizes.items():
            peak[name] = max(peak.get(name, 0.0), size)
        peak["tree"] = max(peak["tree"], sum(s for n, s in sizes.items() if n != "embedded database"))
        peak["tree PSS"] = max(peak["tree PSS"], shared_fairly)
        time.sleep(SAMPLE_SECONDS)
    if top.wait() != 0:
        log.seek(0)
        raise SystemExit(f"transcriber transcribe failed:\n{log.read()}")
    return {"peak": peak, "wall": time.monotonic() - started, "cpu": sum(cpu.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=120.0, help="length of the recording (default 120)")
    parser.add_argument("--speech", choices=("bench", "sample"), default="bench",
                        help="the accuracy benchmark's recordings, or the bundled sample only")
    parser.add_argument("--keep", type=Path, help="build the recording here (and reuse it if there)")
    args = parser.parse_args()

    from bench.scratch import scratch_database
    from service import config

    settings = config.load()
    with tempfile.TemporaryDirectory() as folder:
        path = args.keep or Path(folder) / "long.ogg"
        started = time.monotonic()
        if path.is_file():
            seconds = sum(len(p) for p in pcm16k(path)) / 2 / SAMPLE_RATE
        else:
            seconds = build(path, args.minutes, args.speech)
        print(f"recording: {seconds / 60:.1f} min ({path.stat().st_size / 2**20:.0f} MB Ogg Opus), "
              f"made in {time.monotonic() - started:.0f} s", flush=True)
        with scratch_database(f"transcriber_bench_memory_{os.getpid()}") as url:
            env = {**os.environ, "TRANSCRIBER_DATABASE_URL": url, "TRANSCRIBER_HOME": str(Path(folder) / "home"),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
            result = run(path, env)
    print(f"engine: {settings.engine} ({settings.whisper_model}); RSS sampled every {SAMPLE_SECONDS:g} s")
    print(f"{'audio min':>9} {'peak RSS MB':>11} {'peak PSS MB':>11} {'worker MB':>9} {'recognizer MB':>13} "
          f"{'wall s':>7} {'RTF wall':>8} {'RTF CPU':>7}")
    peak = result["peak"]
    print(f"{seconds / 60:9.1f} {peak['tree']:11.0f} {peak['tree PSS']:11.0f} {peak.get('worker', 0):9.0f} "
          f"{peak.get('recognizer', 0):13.0f} {result['wall']:7.0f} {result['wall'] / seconds:8.3f} "
          f"{result['cpu'] / seconds:7.3f}")
    if "embedded database" in peak:
        print(f"embedded database (not counted above): peak {peak['embedded database']:.0f} MB")


if __name__ == "__main__":
    main()
