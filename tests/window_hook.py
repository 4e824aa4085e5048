"""Loaded into `dramatiq actors` worker processes by the lost-work test (issue 16 §3): the
recognizer of this process gives one segment per window at once for its first window, then stays
busy (beating, so its lease is kept) on the next one, with a `busy` file in WINDOW_HOOK_DIR
saying so, until the test kills the worker. Each worker thus saves exactly one checkpoint before
it dies; the windows and the conversion are real."""
from __future__ import annotations

import os
import time
from pathlib import Path

import actors.steps
from audio.recognized import Recognized


class OneWindowThenBusy:
    name = "one-window-then-busy"

    def __init__(self):
        self.windows = 0

    def recognize(self, pcm, language, beat, prompt=None):
        self.windows += 1
        if self.windows > 1:
            (Path(os.environ["WINDOW_HOOK_DIR"]) / "busy").touch()
        while self.windows > 1:
            beat()
            time.sleep(0.2)
        seconds = len(pcm) / 32000
        return Recognized(segments=[{"start": 0.0, "end": seconds, "text": "window", "words": []}], language="en")


_recognizer = OneWindowThenBusy()
actors.steps.engine = lambda settings: _recognizer
