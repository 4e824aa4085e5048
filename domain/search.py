"""What an owner's search text asks for, before it reaches the database.

PostgreSQL's `websearch_to_tsquery` accepts any text (quotes make a phrase, `or` and `-` are
operators, anything else is a word), so the text is passed to it whole, as a parameter. Two things
are decided here: the bounds on what is accepted, and the last word typed, which is matched as a
prefix (`pipel` finds "pipeline"), the way a search box is expected to behave while one types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from domain.errors import TranscriberError

MAX_QUERY_CHARS = 1000  # longer text is refused: no one types a longer query
MAX_QUERY_WORDS = 64  # so is text of more words: each is a term every candidate row is tested for
MARK_START, MARK_STOP = "<mark>", "</mark>"  # around matched words in a snippet
# hits counted and ranked at most: past it, the count is "at least" this many and the page is the
# best of this many (a common word of an owner of 100 hours matches tens of thousands of segments;
# reading and ranking them all costs more than the 50 ms a search may take, BENCHMARKS.md, Search)
MAX_COUNTED = 1000

_QUOTES = str.maketrans({"«": '"', "»": '"', "“": '"', "”": '"', "„": '"'})  # typographic quotes quote too
_CONTROL = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")
_WORD = re.compile(r"[^\W_]+")
# the last word of the text: letters and digits only, not negated, not inside a quote
_LAST_WORD = re.compile(r"(?:^|[\s(),;:!?.+*&|<>'\[\]{}])([^\W_]+)\s*$")
_OPERATOR_WORDS = {"or"}


class QueryProblem(TranscriberError, code="bad_query"):
    """The text is not a query the service runs; the message says why."""


@dataclass(frozen=True)
class SearchQuery:
    """The text for `websearch_to_tsquery`, and its last word (lower case), which is matched as a
    prefix too (None: the text ends in a quote, a negation, a space or an operator, so no word is
    being typed)."""

    text: str
    prefix: str | None


def parse(raw: str) -> SearchQuery:
    """The query `raw` asks for; QueryProblem when it is empty or out of bounds.

    Control characters (NUL among them, which PostgreSQL's text cannot hold) and lone surrogates
    become spaces: they separate words and match nothing."""
    if len(raw) > MAX_QUERY_CHARS:
        raise QueryProblem(f"a query has at most {MAX_QUERY_CHARS} characters")
    text = _CONTROL.sub(" ", raw).translate(_QUOTES)
    if not _WORD.search(text):
        raise QueryProblem("a query needs at least one word")
    if len(_WORD.findall(text)) > MAX_QUERY_WORDS:
        raise QueryProblem(f"a query has at most {MAX_QUERY_WORDS} words")
    last = _LAST_WORD.search(text)
    if last is None or text.endswith((" ", "\t")) or text[: last.start(1)].count('"') % 2:
        return SearchQuery(text, None)
    word = last.group(1)
    if word.lower() in _OPERATOR_WORDS:
        return SearchQuery(text, None)
    return SearchQuery(text, word.lower())


def said_at(snippet: str, words: list[dict[str, Any]] | None, start: float | None) -> float | None:
    """When the hit's first matched word was said: the start of the earliest of the segment's
    timed `words` that holds a word the snippet marks (compared in lower case, ё as е, as the
    text is indexed), so a hit in a long segment plays from its word, not from the segment's
    start. `start` (the segment's) when the segment has no timed words or none of them is
    marked; None for a hit in the title, summary or topics."""
    if start is None:
        return None
    marked = {part for piece in snippet.split(MARK_START)[1:] for part in _parts(piece.split(MARK_STOP)[0])}
    for word in words or []:
        if marked.intersection(_parts(word.get("word", ""))) and word.get("start") is not None:
            return max(float(word["start"]), start)
    return start


def _parts(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("ё", "е"))


def clock(seconds: float | None) -> str:
    """`seconds` as hh:mm:ss (a title hit, with no time, is 00:00:00)."""
    whole = int(seconds or 0)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
