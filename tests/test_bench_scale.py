"""The archive-scale benchmark (bench/scale.py) runs end to end on a small archive.
Not timed: the figures at a million records live in BENCHMARKS.md."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT, needs_long


def test_scale_bench_smoke_run(env, request):
    """A run over 2,000 records of 20 owners prints every figure of the table — claim
    p50/p99, card and list p99, the sweep, the renewals' HOT share, each claim design's cost —
    and the fairness scenario's order, in which B's upload is claimed second. With --long: the
    rules it measures are tested by default in test_claim_index and test_fair_turns."""
    needs_long(request, "the archive benchmark's smoke run")
    done = subprocess.run([sys.executable, "-m", "bench.scale", "--records", "2000", "--owners", "20",
                           "--waiting", "200", "--samples", "20", "--paused", "100", "--no-write"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for figure in ("claim p50 / p99", "card p99", "list p99", "HOT share", "orphan sweep over 2000 blobs",
                   "now (fair turns)", "queued_at order without fair turns", "one index in available_at order"):
        assert figure in out, out
    assert "A B A A A A … (B claimed at position 2 of 31)" in out, out
