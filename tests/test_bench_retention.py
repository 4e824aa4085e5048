"""The retention benchmark (bench/retention.py) runs end to end on a small archive.
Not timed: the figures live in BENCHMARKS.md."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_retention_bench_smoke_run(env):
    """On 40 done records of 2 owners, half past the retention, the benchmark times
    an owner's use, the owners' list, the stored bytes and the quota check, and the retention
    pass expires exactly the 20 due records."""
    done = subprocess.run([sys.executable, "-m", "bench.retention", "--records", "40", "--owners", "2",
                           "--chunk-kb", "1", "--no-write"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for line in ("owner_usage (one owner)", "owners (owner list, /admin)", "stored_bytes (/metrics)",
                 "check_quota (an upload weighed)", "expire_audio (20 records, blobs deleted)"):
        assert line in done.stdout, done.stdout
