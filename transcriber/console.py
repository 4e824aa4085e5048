"""What every command of the `transcriber` shell shares: the one-line error a user can mend,
JSON output, and the record-id argument."""

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


def record_id_argument(text: str) -> int:
    """An argparse type: a record id in ASCII digits, as the HTTP API takes it."""
    value = parse_record_id(text)
    if value is None:
        raise argparse.ArgumentTypeError(f"a record id is a positive whole number in ASCII digits, got {text!r}")
    return value
