"""Text that a document shows on one line: a record's title, a speaker's name, a subtitle cue's
line. A line break, a tab or any other control character in it would let the text end a line of
the document it is written into and start lines of its own: an srt or vtt cue's timing line, a
blank line ending the cue, a vtt NOTE block, a txt paragraph under another speaker's name.

The owner's entries are refused when they hold such characters (`service.inputs`); the renderers
collapse them to spaces in whatever reaches them anyway (`audio.formats`), older rows included.
"""

from __future__ import annotations

import re

# C0 controls (line feed, carriage return, tab, ...), DEL, C1 controls (NEL among them) and the
# Unicode line and paragraph separators: what some reader somewhere takes for the end of a line
_LINE_BREAKING = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")

LINE_PROBLEM = "must be one line, without line breaks, tabs or other control characters"


def line_problem(value: str) -> str | None:
    """Why `value` cannot be shown on one line, or None when it can."""
    return LINE_PROBLEM if _LINE_BREAKING.search(value) else None


def one_line(value: str) -> str:
    """`value` on one line: each run of control characters becomes one space."""
    return _LINE_BREAKING.sub(" ", value)
