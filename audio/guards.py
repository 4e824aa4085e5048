"""Text guards: checks on what an engine wrote, and the deterministic mends for what fails them.

An engine can produce text no one said. Whisper at temperature 0 can fall into a loop, writing
one phrase over and over to the end of the window; its own remedy, decoding again at a higher
temperature, samples and makes the text random. The guards here decide from the text alone, so
the same window always gets the same verdict and the same mend. They live apart from any engine
because they judge text, whichever engine wrote it.
"""

from __future__ import annotations

import zlib

LOOP_COMPRESSION = 2.4  # text that zlib shrinks more than this repeats itself (Whisper's threshold)
LOOP_REPEATS = 3  # a phrase said this many times in a row, in looping text, is a loop
LOOP_LONGEST = 24  # the longest phrase (in words) looked for


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
            phrase = tokens[at : at + size]
            times = 1
            while tokens[at + times * size : at + (times + 1) * size] == phrase:
                times += 1
            if times >= LOOP_REPEATS:
                keep[at + size : at + times * size] = [False] * ((times - 1) * size)
                at += times * size
                break
        else:
            at += 1
    out = []
    for number, segment in enumerate(segments):
        kept = [(word, entry) for (n, word, entry), k in zip(items, keep, strict=True) if n == number and k]
        if kept:
            entries = [entry for _, entry in kept if entry is not None]
            out.append(
                {
                    **segment,
                    "text": " ".join(word for word, _ in kept),
                    "words": entries,
                    **({"end": entries[-1]["end"]} if entries else {}),
                }
            )
    return out


# --- invented text: a segment no one could have said -------------------------------------------
#
# Whisper can write fluent sentences over silence, noise or music, or far more words than a stretch
# of "uh uh uh" holds; such text need not repeat, so the loop test above misses it. A segment is
# judged by what the decoder knew of it and by what the audio holds where it lies: voice activity
# (a voice-activity detector's speech spans, in seconds from the window's start) and time.

FASTEST_WORDS_PER_SECOND = 6.0  # faster than people speak, sustained
SUSTAINED_WORDS = 8  # a rate is judged over at least this many words ...
SUSTAINED_SECONDS = 3.0  # ... and this much voice: a fast phrase of 2 s is not sustained
SQUEEZED_WORDS = 3  # of this many timed words or more, ...
SHORTEST_WORD = 0.05  # ... most lasting less than this were not said
HESITATIONS = frozenset("uh um uhm hm hmm mm er erm ah eh".split())
LEAST_VOICE_SECONDS = 0.2  # less voice than this under a segment is none
NO_SPEECH_PROB = 0.6  # Whisper's own silence test: the no-speech token this likely ...
SILENT_LOGPROB = -1.0  # ... and the text this unlikely (average log-probability per token)

NO_VOICE, TOO_FAST, LOOP = "no_voice", "too_fast", "loop"


def voiced_seconds(start: float, end: float, voice: list[tuple[float, float]]) -> float:
    """How much of [start, end] the voice spans cover."""
    return sum(max(0.0, min(end, b) - max(start, a)) for a, b in voice)


def implausible(segment: dict, voice: list[tuple[float, float]]) -> str | None:
    """Why no one could have said `segment` (NO_VOICE, TOO_FAST or LOOP), or None when it is
    plausible. `segment` carries the decoder's `no_speech_prob` and `avg_logprob` where the
    engine knows them, `cut` where the decoding ran into its cap in tokens, and `retried` where
    it is the second decoding of a window whose first looped; the compression
    ratio is the text's own (a cut loop is judged as cut)."""
    voiced = voiced_seconds(segment["start"], segment["end"], voice)
    if voiced < LEAST_VOICE_SECONDS:
        return NO_VOICE
    if segment.get("no_speech_prob", 0.0) > NO_SPEECH_PROB and segment.get("avg_logprob", 0.0) < SILENT_LOGPROB:
        return NO_VOICE
    if segment.get("cut"):
        return TOO_FAST  # the decoding ran into its cap in tokens (audio.whisper): no one says that much
    words = len(segment["words"]) or len(segment["text"].split())
    if words >= SUSTAINED_WORDS and words / max(voiced, SUSTAINED_SECONDS) > FASTEST_WORDS_PER_SECOND:
        return TOO_FAST
    timed = [w for w in segment["words"] if _comparable(w["word"]) not in HESITATIONS]  # "uh" is quick
    if len(timed) >= SQUEEZED_WORDS and 2 * sum(w["end"] - w["start"] < SHORTEST_WORD for w in timed) > len(timed):
        return TOO_FAST  # most words align to no time at all: text the audio does not hold
    if compression_ratio(segment["text"]) > LOOP_COMPRESSION:  # Whisper's figure, of the text as it stands
        return LOOP
    if segment.get("retried") and segment.get("avg_logprob", 0.0) < SILENT_LOGPROB:
        # the window looped, and the decoding that forbade the loop is one Whisper itself would
        # not keep: base under AVX kernels turned mfa_uhuh's loop into 18 fluent words nobody said
        return LOOP
    return None


def suppress(segments: list[dict], voice: list[tuple[float, float]]) -> tuple[list[dict], list[dict]]:
    """The plausible segments, and a {"start", "end", "reason"} entry for each one dropped, so
    that nothing is lost without a word."""
    kept, suppressed = [], []
    for segment in segments:
        reason = implausible(segment, voice)
        if reason is None:
            kept.append(segment)
        else:
            suppressed.append({"start": segment["start"], "end": segment["end"], "reason": reason})
    return kept, suppressed


# Whisper's own log_prob_threshold: below it Whisper would decode again at a higher temperature.
# A strict decoding is already the second chance of a window with implausible text, and its
# unlikely segments get no third: on base under AVX2 kernels, mfa_uhuh's strict decoding wrote
# "of the" (average log-probability -1.6) and "I'm not sure I'll" (-1.1), words nobody said.
LEAST_STRICT_LOGPROB = -1.0


def confident(segments: list[dict]) -> list[dict]:
    """The segments of a strict decoding that the decoder itself finds likely enough to keep."""
    return [s for s in segments if s.get("avg_logprob", 0.0) >= LEAST_STRICT_LOGPROB]


def _overlap(a: dict, b: dict) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def fill_in(kept: list[dict], suppressed: list[dict], strict: list[dict]) -> tuple[list[dict], list[dict]]:
    """A window's plausible segments with the holes its suppressed ones left filled by a strict
    decoding's plausible segments (`strict`, already judged): a strict segment fills a hole it
    overlaps and clashes with no kept segment. A hole that none fills stays suppressed."""
    fills = [
        s for s in strict if any(_overlap(s, hole) for hole in suppressed) and not any(_overlap(s, k) for k in kept)
    ]
    still = [hole for hole in suppressed if not any(_overlap(hole, s) for s in fills)]
    return sorted(kept + fills, key=lambda s: s["start"]), still
