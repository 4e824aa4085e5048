"""A watched file's results beside it (`transcriber watch`): `NAME.srt`, `NAME.txt`, `NAME.json`
(NAME: the file's name without its suffix) in the owner's formats (`audio.formats`), or
`NAME.error.txt` with the reason it was not transcribed.

Each is written whole to a hidden temporary file in the same folder, flushed to the disk, and
renamed over its name (a rename within one filesystem is atomic): a reader, or a crash at any
moment, sees the former file or the new one, never a part of one."""

from __future__ import annotations

import contextlib
import os
import tempfile

from audio.formats import render_record
from transcriber.folder import TEMPORARY_SUFFIX

ERROR_SUFFIX = ".error.txt"


def beside(path: str, suffix: str) -> str:
    """The path of a result of the file at `path`: its name without its suffix, then `suffix`."""
    folder, name = os.path.split(path)
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return os.path.join(folder, stem + suffix)


def write_atomically(path: str, text: str) -> None:
    folder, name = os.path.split(path)
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=TEMPORARY_SUFFIX)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(folder)


def _sync_folder(folder: str) -> None:
    """Make the rename itself durable (the folder's entry), where the system allows it."""
    try:
        descriptor = os.open(folder or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_results(path: str, transcript: dict, formats: tuple[str, ...]) -> None:
    """The done record's text (as `Store.transcript` reads it) in each format beside the file; a
    former error file goes (a halted record resumed and done since)."""
    for fmt in formats:
        text = render_record(fmt, transcript)
        write_atomically(beside(path, f".{fmt}"), text if text.endswith("\n") or not text else text + "\n")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(beside(path, ERROR_SUFFIX))


def write_error(path: str, reason: str) -> None:
    write_atomically(beside(path, ERROR_SUFFIX), reason.rstrip("\n") + "\n")
