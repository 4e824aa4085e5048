"""The storage benchmark (bench/storage.py) runs end to end on a short recording:
intake, conversion, checkpoints and the done save of the service, WAL read per transaction.
Not timed: the 2-hour figures live in BENCHMARKS.md."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from bench.storage import NO_WALINSPECT, has_walinspect
from conftest import ROOT


def test_storage_bench_smoke_run(env, postgresql):
    """A 72-second run reports WAL per phase, the WAL of recognition against the
    segment bytes it wrote, and what is kept after done: the original and the text, the
    converted audio gone. Skipped, saying why, on a server without pg_walinspect (the embedded
    one of a machine with none running), where the benchmark says so and stops."""
    if not has_walinspect(postgresql):
        pytest.skip(NO_WALINSPECT)
    done = subprocess.run([sys.executable, "-m", "bench.storage", "--hours", "0.02", "--no-write"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "recognising = checkpoints + done save" in out
    ratio = float(re.search(r"WAL without FPI ([0-9.]+)x the segment bytes", out).group(1))
    assert 0 < ratio <= 1.5, out
    assert "after done: 1 blob(s), converted audio gone" in out
