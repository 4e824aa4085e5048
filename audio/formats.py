"""The transcript in the formats an owner asks for: txt, srt, vtt and json."""
from __future__ import annotations

import json
from typing import NamedTuple

FORMATS = ("txt", "srt", "vtt", "json")
MEDIA_TYPES = {"txt": "text/plain; charset=utf-8", "srt": "application/x-subrip; charset=utf-8",
               "vtt": "text/vtt; charset=utf-8", "json": "application/json"}

# A subtitle a viewer can read before it goes (the usual broadcast limits): at most 7 s on
# screen, on at most two lines of 42 characters.
CUE_SECONDS = 7.0
LINE_CHARS = 42


class Word(NamedTuple):
    text: str       # without surrounding whitespace
    start: float
    end: float
    joiner: str     # what goes between it and the word before on a line: " " or "" (e.g. Chinese)


class Cue(NamedTuple):
    start: float
    end: float
    lines: list[str]


def _clock(seconds: float, separator: str) -> str:
    millis = int(round(max(seconds, 0.0) * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def _joiners(words: list[str], text: str) -> list[str]:
    """What the segment's text has between each word and the one before: a space, or nothing
    in a language written without spaces. A word the text does not show gets a space."""
    joiners, cursor = [], 0
    for word in words:
        found = text.find(word, cursor)
        if found < 0:
            joiners.append(" ")
            continue
        joiners.append("" if found == cursor and cursor else " ")
        cursor = found + len(word)
    return joiners


def _words(segment: dict) -> list[Word]:
    """The segment's timed words; where the engine gave none (older records), the text's
    words with the segment's time shared out in proportion to their length."""
    text = segment.get("text") or ""
    timed = [w for w in segment.get("words") or () if w["word"].strip()]
    if timed:
        stripped = [w["word"].strip() for w in timed]
        return [Word(word, w["start"], w["end"], joiner)
                for word, w, joiner in zip(stripped, timed, _joiners(stripped, text))]
    plain = text.split()
    total = sum(map(len, plain))
    span = segment["end"] - segment["start"]
    words, done = [], 0
    for word in plain:
        start = segment["start"] + span * done / total
        done += len(word)
        words.append(Word(word, start, segment["start"] + span * done / total, " "))
    return words


def _line(words: list[Word]) -> str:
    return words[0].text + "".join(w.joiner + w.text for w in words[1:])


def _lines(words: list[Word]) -> list[str] | None:
    """The words on at most two lines of at most LINE_CHARS, broken at a word and
    as evenly as possible; None when they do not fit. A word longer than a line stands alone."""
    whole = len(_line(words))
    if len(words) == 1 or whole <= LINE_CHARS:
        return [_line(words)]
    best, top = None, -len(words[0].joiner)
    for cut in range(1, len(words)):  # top line words[:cut], bottom line the rest
        top += len(words[cut - 1].joiner) + len(words[cut - 1].text)
        bottom = whole - top - len(words[cut].joiner)
        if (top <= LINE_CHARS or cut == 1) and (bottom <= LINE_CHARS or cut == len(words) - 1):
            if best is None or max(top, bottom) < best[0]:
                best = (max(top, bottom), cut)
    return None if best is None else [_line(words[:best[1]]), _line(words[best[1]:])]


def _fits(words: list[Word]) -> bool:
    """One cue can show these words (a single word always can, however long it lasts)."""
    return len(words) == 1 or words[-1].end - words[0].start <= CUE_SECONDS and _lines(words) is not None


def _pieces(words: list[Word]) -> list[list[Word]]:
    """The words cut into as few cues as fit, filled in turn; the last two then shared out
    evenly in time so the segment does not end on a flash of a word or two."""
    pieces: list[list[Word]] = []
    for word in words:
        if pieces and _fits(pieces[-1] + [word]):
            pieces[-1].append(word)
        else:
            pieces.append([word])
    if len(pieces) >= 2:
        both = pieces[-2] + pieces[-1]
        cuts = [i for i in range(1, len(both)) if _fits(both[:i]) and _fits(both[i:])]
        cut = min(cuts, key=lambda i: max(both[i - 1].end - both[0].start, both[-1].end - both[i].start))
        pieces[-2:] = [both[:cut], both[cut:]]
    return pieces


def cues(segments: list[dict]) -> list[Cue]:
    """Segments cut into subtitle cues: each at most CUE_SECONDS from its first word's start
    to its last word's end (unless one word lasts longer), and at most two lines of
    LINE_CHARS. A cue never spans two segments; cues are in time order and never overlap (a
    cue starts no earlier than the one before ends)."""
    made: list[Cue] = []
    for segment in segments:
        for words in _pieces(_words(segment)):
            start = max(words[0].start, made[-1].end if made else 0.0)
            made.append(Cue(start, max(words[-1].end, start), _lines(words)))
    return made


def _json_segment(segment: dict) -> dict:
    """The segment with its words trimmed of whitespace and timed to the millisecond."""
    if "words" not in segment:
        return segment
    words = [{"word": w["word"].strip(), "start": round(w["start"], 3), "end": round(w["end"], 3)}
             for w in segment["words"] or () if w["word"].strip()]
    return {**segment, "words": words}


def render(fmt: str, text: str, segments: list[dict], duration: float | None = None,
           suppressed: list[dict] | None = None) -> str:
    """The transcript in `fmt`; raises ValueError for a format not in FORMATS. json lists the
    spans whose text the recognizer's guards dropped (`suppressed`: start, end, reason), so
    nothing is lost without a word; the other formats carry the text only."""
    if fmt == "txt":
        return text + "\n" if text else ""
    if fmt == "json":
        return json.dumps({"text": text, "duration_seconds": duration,
                           "segments": [_json_segment(s) for s in segments],
                           "suppressed": list(suppressed or [])}, ensure_ascii=False)
    if fmt == "srt":
        blocks = [f"{i}\n{_clock(c.start, ',')} --> {_clock(c.end, ',')}\n" + "\n".join(c.lines) + "\n"
                  for i, c in enumerate(cues(segments), 1)]
        return "\n".join(blocks)
    if fmt == "vtt":
        blocks = [f"{_clock(c.start, '.')} --> {_clock(c.end, '.')}\n" + "\n".join(c.lines) + "\n"
                  for c in cues(segments)]
        return "WEBVTT\n\n" + "\n".join(blocks)
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
