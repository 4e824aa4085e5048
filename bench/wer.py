"""Word error rate on normalised text: what the accuracy benchmark scores transcripts with.

Both the reference and the recognizer's text go through the same `normalise`, so that
spelling choices that carry no meaning (case, punctuation, "10" against "ten", "Mr." against
"mister", an "um" one side kept and the other dropped) are not counted as errors. `score`
aligns the two word lists by Levenshtein distance and counts substitutions, deletions and
insertions; WER is their sum over the number of reference words.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Hesitations: transcribers write them or not as they please, so they are scored on neither side.
FILLERS = frozenset("uh um uhm umm hm hmm mm mhm mmm er erm ah eh э эм ээ".split())
# ... however long the sound is held in writing ("ummmmmm", "uhhh", "hmmmm", "ээээ"). Not "err"
# or "ahem": the one is a verb, the other a word.
HELD_FILLER = re.compile(r"u+h+|u+h*m+|h+m+|m+h*m+|a+h+|e+h+|э+м*")

# One spelling for words written two ways; the right side is what is kept.
SPELLINGS = {
    "mr": "mister", "mrs": "missus", "dr": "doctor", "st": "saint",
    "gonna": "going to", "wanna": "want to", "yknow": "you know", "y'know": "you know", "alright": "all right", "ok": "okay", "ё": "е",
}

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
         "fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def number_words(n: int) -> str:
    """An English cardinal for 0 ≤ n < 10**9, e.g. 1204 -> "one thousand two hundred four"."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    for size, name in ((10**6, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            head, rest = divmod(n, size)
            return number_words(head) + " " + name + ("" if rest == 0 else " " + number_words(rest))
    raise AssertionError("unreachable")


def _spell_number(match: re.Match) -> str:
    digits = match.group(0).replace(",", "")
    return f" {number_words(int(digits))} " if len(digits) <= 9 else f" {digits} "


def _join_spelled_letters(words: list[str]) -> list[str]:
    """"m f a" -> "mfa": a run of two or more one-letter words is one spelled-out word (runs
    made only of the English words "a" and "i" are left alone)."""
    out: list[str] = []
    run: list[str] = []

    def close():
        if len(run) >= 2 and any(letter not in ("a", "i") for letter in run):
            out.append("".join(run))
        else:
            out.extend(run)
        run.clear()

    for word in words:
        if len(word) == 1 and word.isalpha():
            run.append(word)
        else:
            close()
            out.append(word)
    close()
    return out


def _plain_latin(text: str) -> str:
    """Accents off Latin letters ("montréal" -> "montreal"); other scripts keep theirs (й stays й)."""
    kept = []
    for char in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(char) and kept and kept[-1].isascii():
            continue
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def normalise(text: str, *, numbers: bool = True) -> list[str]:
    """The words of `text` as they are compared: lower case, no punctuation, markup or accents on
    Latin letters, digits as English words (when `numbers`), hesitations dropped, a few
    spellings made one."""
    text = _plain_latin(unicodedata.normalize("NFKC", text).lower().replace("ё", "е"))
    text = re.sub(r"<[^>]*>|\[[^\]]*\]", " ", text)  # <unk>, [laughter]: annotation, not speech
    text = text.replace("’", "'").replace("‘", "'")
    if numbers:
        text = re.sub(r"\d+(?:,\d{3})*", _spell_number, text)
    text = re.sub(r"[^\w\s']|_", " ", text)           # punctuation, hyphens, dashes, dots
    text = re.sub(r"(?<!\w)'|'(?!\w)", " ", text)     # quotes, but not the one in "don't"
    words: list[str] = []
    for word in text.split():
        words.extend(SPELLINGS.get(word, word).split())
    return [w for w in _join_spelled_letters(words) if w not in FILLERS and not HELD_FILLER.fullmatch(w)]


@dataclass(frozen=True)
class Errors:
    """The edit between a reference and a hypothesis, in words."""

    reference_words: int
    substitutions: int
    deletions: int
    insertions: int

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions

    @property
    def wer(self) -> float:
        """Errors per reference word; an empty reference scores 0 if matched, else 1 per insertion."""
        return self.errors / self.reference_words if self.reference_words else float(self.errors)

    def __add__(self, other: "Errors") -> "Errors":
        return Errors(self.reference_words + other.reference_words, self.substitutions + other.substitutions,
                      self.deletions + other.deletions, self.insertions + other.insertions)


NONE = Errors(0, 0, 0, 0)


def align(reference: list[str], hypothesis: list[str]) -> Errors:
    """Levenshtein alignment of two word lists; among equally short edits, the one with the most
    substitutions is taken (the usual convention: S+D+I is the same either way)."""
    rows, cols = len(reference) + 1, len(hypothesis) + 1
    # cost[i][j] = (edits, -substitutions, deletions, insertions) for reference[:i] -> hypothesis[:j]
    previous = [(j, 0, 0, j) for j in range(cols)]
    for i in range(1, rows):
        current = [(i, 0, i, 0)]
        for j in range(1, cols):
            if reference[i - 1] == hypothesis[j - 1]:
                best = previous[j - 1]
            else:
                e, s, d, n = previous[j - 1]
                substitute = (e + 1, s - 1, d, n)
                e, s, d, n = previous[j]
                delete = (e + 1, s, d + 1, n)
                e, s, d, n = current[j - 1]
                insert = (e + 1, s, d, n + 1)
                best = min(substitute, delete, insert)
            current.append(best)
        previous = current
    edits, negative_subs, deletions, insertions = previous[-1]
    return Errors(len(reference), -negative_subs, deletions, insertions)


def score(reference: str, hypothesis: str, *, numbers: bool = True) -> Errors:
    """The word errors of `hypothesis` against `reference`, both normalised."""
    return align(normalise(reference, numbers=numbers), normalise(hypothesis, numbers=numbers))
