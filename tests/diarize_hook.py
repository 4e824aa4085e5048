"""Loaded into a `dramatiq actors` worker process by the diarize crash test
(tests/test_diarize_step.py): once the diarize step of this process saved its first window's
embeddings (a real checkpoint, under its claim), the worker holds there, as if busy on its next
window, until the test kills it. The audio, the embeddings and the checkpoint are real; only the
moment of the crash is pinned, so the test never races the step to its end."""
from __future__ import annotations

import time

from db.pipeline import Pipeline
from domain.stages import Step

_checkpoint = Pipeline.checkpoint


def _saved_then_held(self, claim, *args, **kwargs):
    saved = _checkpoint(self, claim, *args, **kwargs)
    while saved and claim.step is Step.DIARIZE:  # the SIGKILL lands here, the checkpoint committed, the claim held
        time.sleep(0.5)
    return saved


Pipeline.checkpoint = _saved_then_held
