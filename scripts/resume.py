#!/usr/bin/env python3
"""Resume a halted record: `scripts/resume.py ID`. The same code path as `transcriber resume ID`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from transcriber.cli import main

if __name__ == "__main__":
    sys.exit(main(["resume", *sys.argv[1:]]))
