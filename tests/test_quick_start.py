"""The README's quick start prints what the README says it prints (issue 7 target: the
quick-start output on the bundled sample reads correctly)."""
from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT


def test_the_quick_start_prints_the_text_the_readme_shows(env):
    """Issue 7 (targets) / P6-S1: `transcriber transcribe` on the bundled sample, with the default
    engine, prints exactly the line shown under the README's quick start."""
    readme = (ROOT / "README.md").read_text()
    shown = re.search(r"the first command prints[^\n]*\n\n    (.+)\n", readme)
    assert shown, "the README no longer shows the quick start's output"
    done = subprocess.run([sys.executable, "-m", "transcriber.cli", "transcribe",
                           str(ROOT / "transcriber" / "samples" / "hello.ogg")],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == shown.group(1)
