"""What a recognition engine gives back, and the shape of every engine.

These few types stand alone so that each engine, the child-process supervision and the
registry can share them without importing one another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from domain.claims import HaltReason, PermanentStepError

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

    def recognize(
        self, pcm: bytes, language: str | None, prompt: str | None = None, task: str = "transcribe"
    ) -> Recognized:
        """Recognise one window; `language` None lets a multilingual engine detect it; `prompt`
        (the owner's names and jargon) guides an engine that can use one, others ignore it;
        `task` "translate" writes it in English (only an engine intake lets translate gets it:
        `service.intake.checked_task`; another refuses it with `not_translating`)."""


def not_translating(engine: str, task: str) -> None:
    """Refuse a task other than transcription in an engine that cannot translate: intake lets no
    such upload in (`service.intake.checked_task`), so this is a record accepted under another
    configuration, which no retry mends."""
    if task != "transcribe":
        raise PermanentStepError(HaltReason.ENGINE_REFUSED, f"the {engine} engine cannot {task}")


def rounded_seconds(seconds: float) -> float:
    """A time as a transcript keeps it: seconds to the millisecond."""
    return round(float(seconds), 3)


# The longest a word with no voice under it may last: Whisper's word times come from where its
# attention looks, and a word next to a long silence (or one that faster-whisper's VAD filter cut
# out and joined back) can stretch across all of it, seconds of no one speaking.
UNVOICED_WORD_SECONDS = 1.0


def clamp_to_voice(start: float, end: float, voice: list[tuple[float, float]]) -> tuple[float, float]:
    """The part of a word's span [start, end] that a voice fills: of the voice spans (sorted,
    apart) it overlaps, the one it overlaps most (the earliest on a tie), cut to the word. A
    word no voice overlaps keeps at most UNVOICED_WORD_SECONDS of its span, at the end nearer
    a voice. The result lies within [start, end] and never lasts less than nothing."""
    shared = [(min(end, b) - max(start, a), max(start, a), min(end, b)) for a, b in voice if a < end and b > start]
    if shared:
        _, first, last = max(shared, key=lambda s: s[0])  # max keeps the earliest of equals
        return first, last
    if end - start <= UNVOICED_WORD_SECONDS:
        return start, end
    before = [b for _, b in voice if b <= start]
    after = [a for a, _ in voice if a >= end]
    if after and (not before or after[0] - end < start - before[-1]):
        return end - UNVOICED_WORD_SECONDS, end
    return start, start + UNVOICED_WORD_SECONDS


def words_on_voice(segment: dict, voice: list[tuple[float, float]]) -> dict:
    """The segment with each word clamped to the voice under it (`clamp_to_voice`), and its own
    span then that of its words, so no word, segment or subtitle spans a long silence."""
    words = segment.get("words") or []
    if not words:
        return segment
    clamped = []
    for word in words:
        start, end = clamp_to_voice(word["start"], word["end"], voice)
        clamped.append({**word, "start": rounded_seconds(start), "end": rounded_seconds(end)})
    return {**segment, "start": clamped[0]["start"], "end": clamped[-1]["end"], "words": clamped}
