"""Accepting a recording, for the CLI and the HTTP API alike: bad input gets a clear error and
nothing is stored; accepted input is stored whole, with its record, in one transaction."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from audio.decode import UndecodableAudio, probe
from db import Store
from transcriber.config import Settings

READ_BYTES = 1 << 20


class IntakeError(Exception):
    """The input cannot be accepted; nothing was stored."""

    status = 400
    code = "bad_input"


class EmptyFile(IntakeError):
    status = 415
    code = "empty_file"


class TooLarge(IntakeError):
    status = 413
    code = "too_large"


class NotAudio(IntakeError):
    status = 415
    code = "not_audio"


class UnknownOwner(IntakeError):
    code = "unknown_owner"


def size_limit_message(settings: Settings) -> str:
    limit = settings.max_upload_bytes // (1024 * 1024)
    return f"the file is larger than the limit of {limit} MB (TRANSCRIBER_MAX_UPLOAD_MB)"


def _read(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while piece := handle.read(READ_BYTES):
            yield piece


def accept_file(store: Store, settings: Settings, path: Path, *, owner_id: int, title: str = "",
                source_name: str | None = None) -> int:
    """Check the file at `path` holds decodable audio and accept it; return the record id."""
    name = source_name or path.name
    size = path.stat().st_size
    if size == 0:
        raise EmptyFile(f"the file is empty: {name}")
    if size > settings.max_upload_bytes:
        raise TooLarge(f"{size_limit_message(settings)}: {name}")
    try:
        probe(path)
    except UndecodableAudio as error:
        raise NotAudio(f"not decodable audio: {name}: {error}") from None
    return store.accept(owner_id, _read(path), title=title or Path(name).stem, source_name=name)


def submit_file(store: Store, settings: Settings, path: Path, *, owner: str, title: str = "") -> int:
    """Accept the file at `path` for the owner called `owner`; return the new record's id."""
    if not path.is_file():
        raise IntakeError(f"no such file: {path}")
    found = store.owner_by_name(owner)
    if found is None:
        raise UnknownOwner(f"no owner named {owner!r} (create one with: transcriber owner add NAME)")
    return accept_file(store, settings, path, owner_id=found["id"], title=title)
