"""What every command of the `transcriber` shell shares: the one-line error a user can mend,
JSON output, listings, and the record-id argument."""

from __future__ import annotations

import argparse
import json

from domain.errors import TranscriberError
from service.inputs import record_id as parse_record_id

EXIT_USAGE = 2


class UserError(TranscriberError, code="user_error"):
    """A mistake the user can mend: printed as one line, exit status 2."""


def print_json(value: object) -> None:
    print(json.dumps(value, ensure_ascii=False, default=str))


def listed_elsewhere(rows: list[dict], as_json: bool, none_yet: str) -> int | None:
    """A listing's rows printed as one JSON array (`--json`), or `none_yet` when there are none:
    the exit status then; None when the caller prints them as a table, `name_width` wide."""
    if as_json:
        print_json(rows)
        return 0
    if not rows:
        print(none_yet)
        return 0
    return None


def name_width(rows: list[dict]) -> int:
    """The width of a table's name column: the longest name, at least 4."""
    return max(4, *(len(row["name"]) for row in rows))


def record_id_argument(text: str) -> int:
    """An argparse type: a record id in ASCII digits, as the HTTP API takes it."""
    value = parse_record_id(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"a record id is a positive whole number in ASCII digits, got {text!r}")
    return value
