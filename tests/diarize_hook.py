"""Loaded into a `dramatiq actors` worker process by the diarize crash test
(tests/test_diarize_step.py): once the diarize step of this process saved its first window's
embeddings (a real checkpoint, under its claim), the worker holds there, as if busy on its next
window, until the test kills it. The audio, the embeddings and the checkpoint are real; only the
moment of the crash is pinned, so the test never races the step to its end."""
from __future__ import annotations

import time

from db.speakers import Speakers

_checkpoint = Speakers.speakers_checkpoint


def _saved_then_held(self, *args, **kwargs):
    saved = _checkpoint(self, *args, **kwargs)
    while saved:  # the SIGKILL lands here, the checkpoint committed and the claim still held
        time.sleep(0.5)
    return saved


Speakers.speakers_checkpoint = _saved_then_held
