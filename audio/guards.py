"""Text guards: checks on what an engine wrote, and the deterministic mends for what fails them.

An engine can produce text no one said. Whisper at temperature 0 can fall into a loop, writing
one phrase over and over to the end of the window; its own remedy, decoding again at a higher
temperature, samples and makes the text random. The guards here decide from the text alone, so
the same window always gets the same verdict and the same mend. They live apart from any engine
because they judge text, whichever engine wrote it.
"""
from __future__ import annotations

import zlib

LOOP_COMPRESSION = 2.4   # text that zlib shrinks more than this repeats itself (Whisper's threshold)
LOOP_REPEATS = 3         # a phrase said this many times in a row, in looping text, is a loop
LOOP_LONGEST = 24        # the longest phrase (in words) looked for


def compression_ratio(text: str) -> float:
    """How well zlib compresses `text`: about 1.5 for speech, far more for a phrase repeated."""
    raw = text.encode("utf-8")
    return len(raw) / len(zlib.compress(raw)) if raw else 0.0


def loops(segments: list[dict]) -> bool:
    """Whether a window's text repeats itself like a decoding loop."""
    return compression_ratio(" ".join(s["text"] for s in segments)) > LOOP_COMPRESSION


def _comparable(word: str) -> str:
    """A word as repeats are compared: case and punctuation do not make it another word."""
    return "".join(c for c in word.casefold() if c.isalnum())


def cut_repeats(segments: list[dict]) -> list[dict]:
    """The segments with every run of a phrase said LOOP_REPEATS times or more in a row (across
    segments too) cut to its first saying; segments left empty are dropped. Words are the
    segments' timed words where there are any, else their text split at spaces."""
    items = []  # (segment number, word as written, its timed entry or None)
    for number, segment in enumerate(segments):
        if segment["words"]:
            items += [(number, w["word"], w) for w in segment["words"]]
        else:
            items += [(number, w, None) for w in segment["text"].split()]
    tokens = [_comparable(word) for _, word, _ in items]
    keep = [True] * len(items)
    at = 0
    while at < len(tokens):
        for size in range(1, min(LOOP_LONGEST, (len(tokens) - at) // LOOP_REPEATS) + 1):
            phrase = tokens[at:at + size]
            times = 1
            while tokens[at + times * size: at + (times + 1) * size] == phrase:
                times += 1
            if times >= LOOP_REPEATS:
                keep[at + size: at + times * size] = [False] * ((times - 1) * size)
                at += times * size
                break
        else:
            at += 1
    out = []
    for number, segment in enumerate(segments):
        kept = [(word, entry) for (n, word, entry), k in zip(items, keep) if n == number and k]
        if kept:
            entries = [entry for _, entry in kept if entry is not None]
            out.append({**segment, "text": " ".join(word for word, _ in kept), "words": entries,
                        **({"end": entries[-1]["end"]} if entries else {})})
    return out
