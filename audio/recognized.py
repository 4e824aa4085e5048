"""What a recognition engine gives back, and the shape of every engine.

These few types stand alone so that each engine, the child-process supervision and the
registry can share them without importing one another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

# A step's heartbeat: an engine calls it while a window takes its time, to keep the step's claim
# alive and to let it raise (a lost claim, a stopping worker) and so end the wait at once.
# `beat(progress_seconds)` may name how far the step is; a bare `beat()` only says it is alive.
Beat = Callable[..., None]


@dataclass
class Recognized:
    """What an engine makes of one window of audio (at most WINDOW_SECONDS of 16 kHz mono s16).

    Times are seconds from the window's start. Each segment is {"start", "end", "text",
    "words"}, words a list of {"word", "start", "end"} (empty where an engine gives none);
    `language` is the code used or detected, None where the engine cannot tell;
    `language_probability` how sure the engine was of a language it detected (None where it
    was told the language, or cannot tell).
    `suppressed` lists the text an engine's guards dropped as no one could have said it
    (audio.guards): {"start", "end", "reason"} each.
    """

    segments: list[dict]
    language: str | None = None
    language_probability: float | None = None
    suppressed: list[dict] = field(default_factory=list)


class Engine(Protocol):
    """An engine in this process (whisper, pocketsphinx, remote): one window in, its text out."""

    name: str

    def recognize(self, pcm: bytes, language: str | None, prompt: str | None = None) -> Recognized:
        """Recognise one window; `language` None lets a multilingual engine detect it; `prompt`
        (the owner's names and jargon) guides an engine that can use one, others ignore it."""


def rounded_seconds(seconds: float) -> float:
    """A time as a transcript keeps it: seconds to the millisecond."""
    return round(float(seconds), 3)
