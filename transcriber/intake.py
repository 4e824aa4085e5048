"""Accepting a recording: checks that lose nothing and store nothing on bad input."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from db import Store
from transcriber.config import Settings

READ_BYTES = 1 << 20


class IntakeError(Exception):
    """The input cannot be accepted; nothing was stored."""


def _read(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while piece := handle.read(READ_BYTES):
            yield piece


def submit_file(store: Store, settings: Settings, path: Path, *, owner: str, title: str = "") -> int:
    """Accept the file at `path` for `owner`; return the new record's id."""
    if not path.is_file():
        raise IntakeError(f"no such file: {path}")
    size = path.stat().st_size
    if size == 0:
        raise IntakeError(f"the file is empty: {path}")
    if size > settings.max_upload_bytes:
        raise IntakeError(f"the file is larger than TRANSCRIBER_MAX_UPLOAD_MB: {path}")
    found = store.owner_by_name(owner)
    if found is None:
        raise IntakeError(f"no owner named {owner!r} (create one with: transcriber owner add NAME)")
    return store.accept(found["id"], _read(path), title=title or path.stem, source_name=path.name)
