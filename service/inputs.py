"""What users send, checked in one place for the HTTP API and the command line alike.

Record ids, page bounds, the owner's text fields and the names of uploaded files: anything
outside what the service can store or look up is refused here, with a message a person can act
on, before it reaches the database (which would otherwise answer a NUL character, a lone
surrogate or a 64-bit overflow with an internal error). The size of a request body is the web
layer's to limit (`web.body_limit`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from domain.corrections import MAX_SEGMENT_TEXT
from domain.one_line import line_problem

MAX_ID = 2**63 - 1  # a record id is a PostgreSQL bigint
MAX_LIMIT = 200  # records in one page
MAX_OFFSET = 2**63 - 1  # OFFSET is a bigint too
MAX_TITLE = 500
MAX_SUMMARY = 20_000
MAX_TOPIC = 100
MAX_TOPICS = 50
MAX_NAME = 200
MAX_SPEAKER_NAME = 100
FALLBACK_NAME = "upload"

_ASCII_DIGITS = re.compile(r"[0-9]+")
# control characters and lone surrogates: never part of a file's name as shown on a card
_UNSHOWABLE = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def record_id(raw: str) -> int | None:
    """The record id written in `raw`: ASCII digits only (`²` or `١` are not ids), 1…2⁶³−1.
    None for anything else, which callers answer exactly like a missing record."""
    if not _ASCII_DIGITS.fullmatch(raw) or len(raw) > 19:
        return None
    value = int(raw)
    return value if 0 < value <= MAX_ID else None


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text, or None when it can."""
    if "\x00" in value:
        return "must not contain NUL characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode text"
    return None


def _validator(problem_of: Callable[[str], str | None]) -> Callable[[str], str]:
    """A pydantic validator: `value` if `problem_of` finds none; ValueError naming it otherwise."""

    def validate(value: str) -> str:
        problem = problem_of(value)
        if problem:
            raise ValueError(problem)
        return value

    return validate


storable = _validator(text_problem)  # text the database can store


def one_line_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text that documents show on one line (a title, a
    speaker's name), or None when it can."""
    return text_problem(value) or line_problem(value)


storable_line = _validator(one_line_problem)  # storable text on one line


# Strings of at most so many characters that the database can store as text; a title and a
# speaker's name reach the text documents (a cue's first line, a txt paragraph's opening), so on
# one line.
Title = Annotated[str, Field(max_length=MAX_TITLE), AfterValidator(storable_line)]
Summary = Annotated[str, Field(max_length=MAX_SUMMARY), AfterValidator(storable)]
Topic = Annotated[str, Field(max_length=MAX_TOPIC), AfterValidator(storable)]
SpeakerName = Annotated[str, Field(max_length=MAX_SPEAKER_NAME), AfterValidator(storable_line)]
SpeakerLabel = Annotated[str, Field(pattern=r"^S[1-9][0-9]?$")]


class Edit(BaseModel):
    """The owner's edit: title, summary, topics, speaker names and rejected matches only; anything
    else is refused (422)."""

    model_config = ConfigDict(extra="forbid")
    title: Title | None = None
    summary: Summary | None = None
    topics: list[Topic] | None = Field(default=None, max_length=MAX_TOPICS)
    # names for speaker labels ({"S1": "Alice"}; "" or null takes a name away); a name enrols the
    # speaker in the owner's voice of that name
    speakers: dict[SpeakerLabel, SpeakerName | None] | None = Field(default=None, max_length=99)
    # speakers whose matched voice is not theirs (["S2"]): never matched to it again
    speakers_rejected: list[SpeakerLabel] | None = Field(default=None, max_length=99)


class VoiceEdit(BaseModel):
    """The owner's rename of a voice: a speaker's name, by the same rules."""

    model_config = ConfigDict(extra="forbid")
    name: Annotated[
        SpeakerName, AfterValidator(_validator(lambda value: None if value.strip() else "must not be blank"))
    ]


class VoiceMerge(BaseModel):
    """A merge of a voice into another of the owner's."""

    model_config = ConfigDict(extra="forbid")
    into: int = Field(ge=1, le=MAX_ID)


# A segment's corrected text reaches every document the text is read in (a cue, a txt line): one line.
SegmentText = Annotated[str, Field(max_length=MAX_SEGMENT_TEXT), AfterValidator(storable_line)]
MAX_SEGMENT = 2**31 - 1  # a segment's place is an integer column
MAX_WORD_TEXT = 100  # characters of one corrected word


class SegmentEdit(BaseModel):
    """One segment's new text; `index` is its place in the text (from 0, as the json format lists it)."""

    model_config = ConfigDict(extra="forbid")
    index: int = Field(ge=0, le=MAX_SEGMENT)
    text: SegmentText


# One word of a segment: what a timed word can be (no space in it), on one line.
WordText = Annotated[
    str,
    Field(min_length=1, max_length=MAX_WORD_TEXT),
    AfterValidator(storable_line),
    AfterValidator(_validator(lambda value: "must be one word, with no space" if value.split() != [value] else None)),
]


class WordEdit(BaseModel):
    """One word's new text: word `index` (from 0) of segment `segment` (its place, as the json
    format lists it: the segment's `index`, and the word's place in its `words`)."""

    model_config = ConfigDict(extra="forbid")
    segment: int = Field(ge=0, le=MAX_SEGMENT)
    index: int = Field(ge=0, le=MAX_SEGMENT)
    text: WordText


class TextEdit(BaseModel):
    """The owner's corrections of a done record's text: segments' new texts, then single words'
    (each keeping every other word's times), applied in order, all or none."""

    model_config = ConfigDict(extra="forbid")
    segments: list[SegmentEdit] = Field(default=[], max_length=100)
    words: list[WordEdit] = Field(default=[], max_length=100)

    @model_validator(mode="after")
    def some_edit(self) -> TextEdit:
        if not self.segments and not self.words:
            raise ValueError("no edit: give segments or words")
        if len(self.segments) + len(self.words) > 100:
            raise ValueError("at most 100 edits a request")
        return self


def speakers_wanted(raw: str | int | None) -> str:
    """What an upload asks of diarization: `auto` (the service decides), `off`, or a number of
    speakers 1–99; ValueError for anything else."""
    value = str(raw if raw is not None else "auto").strip().lower() or "auto"
    if value in ("auto", "off") or (_ASCII_DIGITS.fullmatch(value) and 1 <= int(value) <= 99):
        return value if value in ("auto", "off") else str(int(value))
    raise ValueError(f"speakers must be auto, off or a number from 1 to 99, got {value[:20]!r}")


def source_name(raw: str | None) -> str:
    """The name an uploaded or submitted file is shown by: its last path part only (no
    directories, `..` or drive), without control characters, undecodable bytes shown as �."""
    name = re.split(r"[/\\]", raw or "")[-1]
    name = _UNSHOWABLE.sub("\ufffd", name).strip()[:MAX_NAME]
    return FALLBACK_NAME if name in ("", ".", "..") else name
