"""Recognizers that stand in for a model, for the tests whose subject is the pipeline around
recognition (leases, kills, brokers, speakers), not its words: the recordings, their conversion
and their windows stay real; only the model's CPU is spared. Importing this changes nothing: the
test (`hears_word_a_second`) or the worker's hook module (`window_hook`) puts one in place."""
from __future__ import annotations

import time
from pathlib import Path


class WordASecond:
    """Hears one word a second: one segment per window, with word times (so a change of speaker
    splits it), at no cost. `pause` makes each window take that long, as a slow model would,
    without spending CPU."""

    name = "word-a-second"

    def __init__(self, pause: float = 0.0):
        self.pause = pause

    def recognize(self, pcm, language, beat, prompt=None):
        from audio.decode import SAMPLE_RATE
        from audio.recognized import Recognized

        time.sleep(self.pause)
        seconds = len(pcm) / (2 * SAMPLE_RATE)
        words = [{"word": "word", "start": float(t), "end": min(t + 0.8, seconds)} for t in range(int(seconds))]
        text = " ".join(w["word"] for w in words)
        return Recognized(segments=[{"start": 0.0, "end": seconds, "text": text, "words": words}], language="en")


def words_heard(pcm_windows) -> list[str]:
    """What WordASecond writes for a recording cut into these windows ((start, PCM) pairs)."""
    from audio.decode import SAMPLE_RATE

    return ["word"] * sum(int(len(pcm) / (2 * SAMPLE_RATE)) for _, pcm in pcm_windows)


class BusyAfterFirstWindow(WordASecond):
    """WordASecond for the first window its process is given; on the next it stays busy, beating
    (so its lease is kept), with a `busy` file in `folder` saying so, until its worker is killed
    or stopped (a stopping worker's beat raises). The test thus kills or stops a worker at a
    known point, one checkpoint saved, without racing a model to the end of the recording."""

    def __init__(self, folder: Path):
        super().__init__()
        self.folder, self.windows = folder, 0

    def recognize(self, pcm, language, beat, prompt=None):
        self.windows += 1
        if self.windows > 1:
            (self.folder / "busy").touch()
            while True:
                beat()
                time.sleep(0.2)
        return super().recognize(pcm, language, beat, prompt)
