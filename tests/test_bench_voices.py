"""The voice benchmark (bench/voices.py) runs end to end on the repository's own recordings
(--tiny: two people enrolled from one recording each and heard in another, one never enrolled,
50 voices): it prints its table and every figure BENCHMARKS.md quotes. Not timed: the figures of
the 13 people and 500 voices live in BENCHMARKS.md."""
from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT


def test_voice_bench_tiny_run(env):
    done = subprocess.run([sys.executable, "-m", "bench.voices", "--tiny"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    row = re.search(r"^\s*tiny\s+([0-9.]+)\s+1\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", out, re.MULTILINE)
    assert row, out
    _, turns, correct, wrong, strangers_named = (float(g) for g in row.groups())
    assert turns >= 3 and correct >= 50 and wrong <= 2 and strangers_named == 0, out
    for figure in ("match_cpu_pct_of_diarize", "numpy_ms_per_speaker_50_voices", "service_ms_per_speaker_50_voices"):
        value = re.search(rf"^{figure}: ([0-9.]+)$", out, re.MULTILINE)
        assert value and float(value.group(1)) > 0, out
    assert "written" not in out  # a tiny run leaves bench/results alone
