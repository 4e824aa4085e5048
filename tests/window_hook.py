"""Loaded into `dramatiq actors` worker processes (as a module of theirs) or a test's worker
script by the tests whose subject is the workers, not the words: what the process recognises is
`stand_ins.WordASecond`'s, taking WINDOW_HOOK_PAUSE seconds a window. With WINDOW_HOOK_DIR set,
it is `BusyAfterFirstWindow`'s: each worker saves exactly one checkpoint, then stays busy until
the test kills or stops it. The recordings, their conversion and their windows are real."""
from __future__ import annotations

import os
from pathlib import Path

import actors.steps
from stand_ins import BusyAfterFirstWindow, WordASecond

_folder = os.environ.get("WINDOW_HOOK_DIR")
_pause = float(os.environ.get("WINDOW_HOOK_PAUSE", "0"))
_recognizer = BusyAfterFirstWindow(Path(_folder)) if _folder else WordASecond(_pause)
actors.steps.engine = lambda settings: _recognizer
