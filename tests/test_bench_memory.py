"""The long-recording memory benchmark (bench/memory.py: peak memory on a 2-hour recording) runs
end to end on a short recording: the figure it reports comes from the real `transcriber
transcribe` tree. Not timed: the 2-hour figure itself lives in BENCHMARKS.md."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_memory_bench_smoke_run(env):
    """A 20-second run builds its recording, transcribes it through the worker and its
    recognizer child process, and prints the peak of both, as the 2-hour run does."""
    done = subprocess.run([sys.executable, "-m", "bench.memory", "--minutes", "0.33", "--speech", "sample"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[-2].split()[:3] == ["audio", "min", "peak"]
    minutes, rss, pss, worker, recognizer = map(float, lines[-1].split()[:5])
    assert 0.3 <= minutes <= 0.34
    assert recognizer > 50 and worker > 20, "the worker and its recognizer child were both measured"
    assert rss >= worker + recognizer - 1 and 0 < pss <= rss
