"""Owners: the rule for an owner's name, and the states of an owner's access.

An owner holds one API token at a time. A new token replaces the old one at once; a disabled
owner's token is refused until the owner is enabled again, and then works as before. Records
are never touched by either: they stay in the pipeline and keep their owner.
"""

from __future__ import annotations

import unicodedata

from domain.errors import TranscriberError

MAX_NAME_LENGTH = 64

ACTIVE = "active"
DISABLED = "disabled"


class InvalidOwnerName(TranscriberError, code="bad_owner_name"):
    """A name no owner may have; the message says why in one line."""


def check_name(name: str) -> str:
    """Return `name` when it is a usable owner name, else raise InvalidOwnerName.

    A name is 1 to 64 characters, not blank, with no whitespace at either end and no control,
    format or otherwise invisible character (it is printed in listings and log lines).
    """
    if not name or not name.strip():
        raise InvalidOwnerName("an owner name may not be empty or blank")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidOwnerName(f"an owner name is at most {MAX_NAME_LENGTH} characters, got {len(name)}")
    if name != name.strip():
        raise InvalidOwnerName(f"an owner name may not begin or end with whitespace: {name!r}")
    if any(_invisible(character) for character in name):
        raise InvalidOwnerName(f"an owner name may not contain control or invisible characters: {name!r}")
    return name


def _invisible(character: str) -> bool:
    # C*: control, format, surrogate (undecodable bytes), private use, unassigned;
    # Zl/Zp: line and paragraph separators; other whitespace than a plain space
    category = unicodedata.category(character)
    return category[0] == "C" or category in ("Zl", "Zp") or (character.isspace() and character != " ")


def state(disabled_at: object) -> str:
    return DISABLED if disabled_at is not None else ACTIVE
