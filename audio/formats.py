"""The transcript in the formats an owner asks for: txt, srt, vtt and json.

Where segments carry a `speaker` (a machine label, S1, S2, …: see audio/speakers), every format
says who speaks: each srt/vtt cue starts with the speaker's name in brackets (a cue never spans
two segments nor two speakers: it is cut where its words' speaker changes), txt starts a
paragraph at each change of speaker, and json keeps `speaker` on segments and words and lists
the names.

Whatever text reaches them (a recognizer's, a speaker's name an older row kept), srt, vtt and txt
keep their structure: a cue's line and a txt paragraph are one line (`domain.one_line`), a cue's
text holds no `-->` that could pass for a timing line, and vtt escapes its markup characters.
"""

from __future__ import annotations

import html
import json
import re
from itertools import groupby
from typing import Any, NamedTuple

from domain.card import speaker_view
from domain.one_line import one_line
from domain.speakers import speaker_name

FORMATS = ("txt", "srt", "vtt", "json")
MEDIA_TYPES = {
    "txt": "text/plain; charset=utf-8",
    "srt": "application/x-subrip; charset=utf-8",
    "vtt": "text/vtt; charset=utf-8",
    "json": "application/json",
}

# A subtitle a viewer can read before it goes (the usual broadcast limits): at most 7 s on
# screen, on at most two lines of 42 characters.
CUE_SECONDS = 7.0
LINE_CHARS = 42


class Word(NamedTuple):
    text: str  # without surrounding whitespace
    start: float
    end: float
    joiner: str  # what goes between it and the word before on a line: " " or "" (e.g. Chinese)
    speaker: str | None = None  # its machine label, where speakers are known


class Cue(NamedTuple):
    start: float
    end: float
    lines: list[str]


def _clock(seconds: float, separator: str) -> str:
    millis = round(max(seconds, 0.0) * 1000)
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
        return [
            Word(word, w["start"], w["end"], joiner, w.get("speaker") or segment.get("speaker"))
            for word, w, joiner in zip(stripped, timed, _joiners(stripped, text), strict=True)
        ]
    plain = text.split()
    total = sum(map(len, plain))
    span = segment["end"] - segment["start"]
    words, done = [], 0
    for word in plain:
        start = segment["start"] + span * done / total
        done += len(word)
        words.append(Word(word, start, segment["start"] + span * done / total, " ", segment.get("speaker")))
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
        fits = (top <= LINE_CHARS or cut == 1) and (bottom <= LINE_CHARS or cut == len(words) - 1)
        if fits and (best is None or max(top, bottom) < best[0]):
            best = (max(top, bottom), cut)
    return None if best is None else [_line(words[: best[1]]), _line(words[best[1] :])]


def _fits(words: list[Word]) -> bool:
    """One cue can show these words (a single word always can, however long it lasts)."""
    return len(words) == 1 or (words[-1].end - words[0].start <= CUE_SECONDS and _lines(words) is not None)


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


# A timing arrow, with every dash before it: what replaces the whole run cannot form a new one.
_ARROW = re.compile(r"-{2,}>")


def _legible(segment: dict) -> dict:
    """The segment with its text and words on one line (control characters as spaces), so that
    a word made of them only is no word, and none breaks the line it is shown on."""
    words = segment.get("words")
    return {
        **segment,
        "text": one_line(segment.get("text") or ""),
        **({"words": [{**w, "word": one_line(w["word"])} for w in words]} if words else {}),
    }


def cue_line(line: str) -> str:
    """A line of a cue as srt and vtt show it: on one line, and with no `-->` (shown `->`)
    that a reader would take for a cue's timing."""
    return _ARROW.sub("->", one_line(line))


def _turns(words: list[Word]) -> list[list[Word]]:
    """The words in runs of one speaker each, in order."""
    return [list(run) for _, run in groupby(words, key=lambda word: word.speaker)]


def cues(segments: list[dict], names: dict[str, str] | None = None) -> list[Cue]:
    """Segments cut into subtitle cues: each from its first word's start to its last word's
    end (not the segment's: a segment's span may hold a pause its words do not), at most
    CUE_SECONDS (unless one word lasts longer), and at most two lines of LINE_CHARS. A cue never
    spans two segments nor a change of speaker (its words' speakers, where they carry one);
    cues are in time order and never overlap (a cue starts no earlier than the one before ends)."""
    made: list[Cue] = []
    for segment in segments:
        for words in (piece for run in _turns(_words(_legible(segment))) for piece in _pieces(run)):
            start = max(words[0].start, made[-1].end if made else 0.0)
            lines = _lines(words)
            if lines is None:  # never: _pieces makes only pieces that fit
                raise ValueError(f"a cue of {len(words)} words does not fit on two lines")
            if words[0].speaker:
                lines = [f"[{speaker_name(words[0].speaker, names)}] {lines[0]}", *lines[1:]]
            made.append(Cue(start, max(words[-1].end, start), [cue_line(line) for line in lines]))
    return made


def _json_segment(segment: dict) -> dict:
    """The segment with its words trimmed of whitespace and timed to the millisecond."""
    if "words" not in segment:
        return segment
    words = [
        {
            "word": w["word"].strip(),
            "start": round(w["start"], 3),
            "end": round(w["end"], 3),
            **({"speaker": w["speaker"]} if w.get("speaker") else {}),
        }
        for w in segment["words"] or ()
        if w["word"].strip()
    ]
    return {**segment, "words": words}


def speaker_paragraphs(segments: list[dict], names: dict[str, str] | None = None) -> str:
    """The text as paragraphs, one per speaker turn, each opened with the speaker's name."""
    paragraphs: list[list] = []
    for segment in segments:
        text = one_line(segment.get("text") or "").strip()
        if not text:
            continue
        if paragraphs and paragraphs[-1][0] == segment.get("speaker"):
            paragraphs[-1][1].append(text)
        else:
            paragraphs.append([segment.get("speaker"), [text]])
    return "\n\n".join(
        (f"[{one_line(speaker_name(who, names))}] " if who else "") + " ".join(texts) for who, texts in paragraphs
    )


def _vtt_text(line: str) -> str:
    """A cue's line as vtt text: `&`, `<` and `>` escaped, so that no text reads as markup."""
    return html.escape(line, quote=False)


def render(
    fmt: str,
    text: str,
    segments: list[dict],
    duration: float | None = None,
    *,
    names: dict[str, str] | None = None,
    language: str | None = None,
    language_probability: float | None = None,
    suppressed: list[dict] | None = None,
    speaker_list: list[dict] | None = None,
) -> str:
    """The transcript in `fmt`; raises ValueError for a format not in FORMATS. `names` are the
    owner's names for the speaker labels the segments carry, if any; json names the language
    too, and how sure the recognizer was of it where it detected it, and lists the spans whose
    text the recognizer's guards dropped (`suppressed`: start, end, reason), so nothing is lost
    without a word, and each speaker's match to a voice (`speaker_list`, as the card shows it);
    the other formats carry the text only."""
    diarized = any(s.get("speaker") for s in segments)
    if fmt == "txt":
        if diarized:
            text = speaker_paragraphs(segments, names)
        return text + "\n" if text else ""
    if fmt == "json":
        document: dict[str, Any] = {
            "text": text,
            "duration_seconds": duration,
            "language": language,
            "language_probability": language_probability,
            "segments": [_json_segment(s) for s in segments],
            "suppressed": list(suppressed or []),
        }
        if diarized:
            document["speakers"] = shown_speakers(segments, names)
            document["speaker_list"] = [
                speaker_view(s) for s in speaker_list or () if s["label"] in document["speakers"]
            ]
        return json.dumps(document, ensure_ascii=False)
    if fmt == "srt":
        blocks = [
            f"{i}\n{_clock(c.start, ',')} --> {_clock(c.end, ',')}\n" + "\n".join(c.lines) + "\n"
            for i, c in enumerate(cues(segments, names), 1)
        ]
        return "\n".join(blocks)
    if fmt == "vtt":
        blocks = [
            f"{_clock(c.start, '.')} --> {_clock(c.end, '.')}\n" + "\n".join(map(_vtt_text, c.lines)) + "\n"
            for c in cues(segments, names)
        ]
        return "WEBVTT\n\n" + "\n".join(blocks)
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")


def shown_speakers(segments: list[dict], names: dict[str, str] | None) -> dict[str, str]:
    """The speakers the labelled segments carry, in label order, each with the name shown."""
    labels = sorted({s["speaker"] for s in segments if s.get("speaker")}, key=lambda x: int(x[1:]))
    return {label: speaker_name(label, names) for label in labels}


def labelled_segments(row: dict) -> list[dict]:
    """A done record's segments as the store reads them (`Store.transcript`), each given its
    speaker when the diarize step saved turns (split where the speaker changes)."""
    segments = row.get("segments") or []
    turns = row.get("turns") or []
    if not turns or (len({turn["speaker"] for turn in turns}) < 2 and not row.get("speaker_names")):
        return segments  # one voice needs no label, unless its owner named it
    from audio.speakers.assign import Turn, assign

    return assign(segments, [Turn(t["start"], t["end"], t["speaker"]) for t in turns])


def render_record(fmt: str, row: dict) -> str:
    """A done record's text in `fmt` as the store reads it (`Store.transcript`): with speakers
    once they are found, under the names the owner gave them, and its language and suppressed
    spans in json."""
    return render(
        fmt,
        row["transcript"] or "",
        labelled_segments(row),
        row["duration_seconds"],
        names=row.get("speaker_names"),
        language=row.get("language"),
        language_probability=row.get("language_probability"),
        suppressed=row.get("suppressed"),
        speaker_list=row.get("speaker_list"),
    )
