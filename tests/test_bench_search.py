"""The search benchmark (bench/search.py) runs end to end on a tiny archive:
the fill, the five kinds of query, the sizes and an hour's indexing. Not timed: the figures of
1,000,000 segments live in BENCHMARKS.md."""
from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT


def test_search_bench_smoke_run(env):
    """2,000 segments for 4 owners; every kind of query runs and finds segments
    (a pseudo-word may be a stop word, so not every query finds its own), and the size per audio
    hour and the indexing of an hour are reported."""
    command = [sys.executable, "-m", "bench.search", "--segments", "2000", "--owners", "4",
               "--queries", "8", "--heavy", "500", "--no-write"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for kind in ("one word", "two words", "phrase", "prefix", "common word"):
        row = re.search(rf"^\s*{kind}\s+(\d+)\s.*\s([0-9.]+)\s+[0-9.]+$", out, re.MULTILINE)  # runs, with hits
        assert row and int(row.group(1)) > 0 and float(row.group(2)) > 0, out
    assert re.search(r"size per audio hour: \d+ kB", out) and "indexing adds" in out, out
