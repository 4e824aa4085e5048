"""Accepting a recording: `accept_recording` is the one way in, for the HTTP API (an upload is
spooled to a file first, `web.uploads`), the OpenAI-compatible address and the command line
(`submit`, `transcribe`) alike. Bad input gets a clear error and nothing is stored; accepted input
is stored whole, with its record, in one transaction.

The refusals below carry a stable `code` (`domain.errors`); which HTTP status answers each is
decided by the web layer alone (`web.errors`)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from audio.decode import TooLong, UndecodableAudio, UnsupportedStream, probe
from db import Store
from db.quotas import QuotaExceeded
from db.records import NewRecord
from db.resumable import Finishing
from db.uploads import SameUpload, UploadKeyReused
from domain.asked import TASKS, TRANSLATE, Asked
from domain.errors import TranscriberError
from service import inputs, runtime
from service.config import Settings

READ_BYTES = 1 << 20


class IntakeError(TranscriberError, code="bad_input"):
    """The input cannot be accepted; nothing was stored."""

    details: Mapping[str, Any] = MappingProxyType({})  # fields a JSON answer adds beside the message


class EmptyFile(IntakeError, code="empty_file"):
    """The file holds no bytes at all."""


class TooLarge(IntakeError, code="too_large"):
    """The file is larger than the upload limit (TRANSCRIBER_MAX_UPLOAD_MB)."""


class NotAudio(IntakeError, code="not_audio"):
    """The file holds no audio that can be decoded."""


class AudioTooLong(IntakeError, code="audio_too_long"):
    """The audio lasts longer than the cap (TRANSCRIBER_MAX_AUDIO_SECONDS)."""


class UnsupportedAudio(IntakeError, code="unsupported_audio"):
    """The audio stream's parameters are absurd (a sample rate of a few Hz, hundreds of channels)."""


class KeyReused(IntakeError, code="idempotency_key_reused"):
    """The owner's Idempotency-Key was first sent with other bytes, or asking for something else
    (`domain.asked`)."""


class OverQuota(IntakeError, code="quota_exceeded"):
    """The upload would pass a limit of its owner's quota (`transcriber owner quota`)."""


class UnknownOwner(IntakeError, code="unknown_owner"):
    """No owner has the name given on the command line."""


class BadLanguage(IntakeError, code="bad_language"):
    """Not a language code, or one the configured engine cannot recognise."""


class BadText(IntakeError, code="bad_text"):
    """A text field the database cannot store (a NUL character, a lone surrogate), or a title
    that is not one line."""


class BadPrompt(IntakeError, code="bad_prompt"):
    """A prompt longer than MAX_PROMPT characters, or one the database cannot store."""


MAX_PROMPT = 800  # characters: Whisper reads at most about 224 tokens of prompt


def checked_prompt(prompt: str | None) -> str | None:
    """The owner's prompt for the recognizer (names, jargon, context), or None for none; a
    prompt the database cannot store or longer than MAX_PROMPT characters is refused."""
    if prompt is None or not prompt.strip():
        return None
    if len(prompt) > MAX_PROMPT:
        raise BadPrompt(f"the prompt is {len(prompt)} characters long; at most {MAX_PROMPT} are allowed")
    problem = inputs.text_problem(prompt)
    if problem:
        raise BadPrompt(f"the prompt {problem}")
    return prompt.strip()


class BadSpeakers(IntakeError, code="bad_speakers"):
    """Not auto, off or a number of speakers from 1 to 99."""


def checked_speakers(speakers: str | int | None) -> str:
    """What the upload asks of diarization (auto, off or a number); BadSpeakers otherwise."""
    try:
        return inputs.speakers_wanted(speakers)
    except ValueError as error:
        raise BadSpeakers(str(error)) from None


def checked_text(field: str, value: str, problem_of: Callable[[str], str | None] = inputs.text_problem) -> str:
    """`value` if the database can store it as the record's `field` (and `problem_of` finds no
    other problem with it); BadText otherwise."""
    problem = problem_of(value)
    if problem:
        raise BadText(f"the {field} {problem}")
    return value


def checked_language(settings: Settings, language: str | None) -> str | None:
    """The language asked for with an upload, checked against what the engine can do; None when
    none was asked for (the service's default applies)."""
    from audio.models import english_only
    from service.config import check_language

    if language is None or not language.strip():
        return None
    try:
        code = check_language(language)
    except ValueError as error:
        raise BadLanguage(str(error)) from None
    if code not in ("auto", "en") and settings.engine == "faster-whisper" and english_only(settings.whisper_model):
        raise BadLanguage(
            f"the model {settings.whisper_model} knows English only; "
            "set TRANSCRIBER_WHISPER_MODEL=base for other languages"
        )
    return code


class BadTask(IntakeError, code="bad_task"):
    """Not a task recognition knows (transcribe, translate), or a translation the configured
    engine cannot write."""


def checked_task(settings: Settings, task: str | None) -> str:
    """What recognition is asked to write (`domain.asked`: transcribe, the default, or translate);
    BadTask for another word, or for a translation asked of an engine that cannot write one
    (only Whisper's multilingual models translate: refused here, before anything is stored,
    rather than halted later)."""
    from audio.models import english_only

    chosen = (task or "").strip().lower() or TASKS[0]
    if chosen not in TASKS:
        raise BadTask(f"unknown task {task!r}: one of {', '.join(TASKS)}")
    if chosen == TRANSLATE:
        if settings.engine != "faster-whisper":
            raise BadTask(
                f"the {settings.engine} engine cannot translate; set TRANSCRIBER_ENGINE=faster-whisper "
                "and TRANSCRIBER_WHISPER_MODEL=base for an English translation"
            )
        if english_only(settings.whisper_model):
            raise BadTask(
                f"the model {settings.whisper_model} knows English only and cannot translate; "
                "set TRANSCRIBER_WHISPER_MODEL=base for an English translation"
            )
    return chosen


def size_limit_message(settings: Settings) -> str:
    limit = settings.max_upload_bytes // (1024 * 1024)
    return f"the file is larger than the limit of {limit} MB (TRANSCRIBER_MAX_UPLOAD_MB)"


def asked_of(
    settings: Settings,
    *,
    language: str | None = None,
    prompt: str | None = None,
    speakers: str | int | None = None,
    task: str | None = None,
) -> Asked:
    """What an upload asks of recognition, checked: everything that changes its result, and so
    everything a repeat of its bytes must ask alike to be answered by its record
    (`domain.asked`). Raises BadLanguage, BadPrompt, BadSpeakers or BadTask."""
    return Asked(
        checked_language(settings, language),
        checked_prompt(prompt),
        checked_speakers(speakers),
        checked_task(settings, task),
    )


def _read(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while piece := handle.read(READ_BYTES):
            yield piece


def accept_recording(
    store: Store,
    settings: Settings,
    path: Path,
    *,
    owner_id: int,
    title: str = "",
    source_name: str | None = None,
    language: str | None = None,
    prompt: str | None = None,
    speakers: str | int | None = None,
    task: str | None = None,
    same: SameUpload | None = None,
    continue_unfinished: bool = False,
    upload: Finishing | None = None,
    cut_short: bool = False,
) -> tuple[int, bool]:
    """The one intake: check what the upload asks for and the file at `path`, then store them as
    a new record of the owner's; the record id, and whether it is new.

    The record is an earlier one instead when `same` names an earlier upload this one repeats
    (`db.uploads`), or, with `continue_unfinished`, when an earlier run left the same bytes
    unfinished (found before the file is probed or stored again; the bytes' SHA-256 is kept with
    a new record, so that a later run finds it); either only when that upload asked alike
    (`asked_of`). Input that cannot be accepted raises an IntakeError with nothing stored; the
    same key with other bytes, or asking for something else, is KeyReused.

    `upload` is the hold of the one finisher of a resumable upload of the owner's
    (`db.resumable.Finishing`) whose bytes, already stored, `path` is a copy of: once checked
    they become the record's as they are, in the finisher's transaction (`cut_short`: its
    uploader went quiet before saying it had stopped)."""
    name = inputs.source_name(source_name or path.name)
    title = checked_text("title", title, inputs.one_line_problem)  # as `inputs.Title`
    asked = asked_of(settings, language=language, prompt=prompt, speakers=speakers, task=task)
    if continue_unfinished and same is None:
        same = _same_bytes(settings, path)
    try:
        earlier = None if same is None else store.earlier_upload(owner_id, same, asked)
        if earlier is None and continue_unfinished and same is not None:
            earlier = _unfinished(store, owner_id, same.sha256, asked)
        if earlier is not None:
            return earlier, False
        size, declared = _check_audio(settings, path, name)
        new = NewRecord(title or Path(name).stem, name, asked=asked, declared_seconds=declared, cut_short=cut_short)
        if upload is not None:
            return store.finish_upload(upload, owner_id, new, same)
        return store.store_recording(owner_id, _read(path), new, expected_bytes=size, same=same)
    except UploadKeyReused:
        raise KeyReused(
            "this Idempotency-Key was first sent with other bytes or other parameters (language, prompt, "
            "speakers, task); a new upload needs a new key"
        ) from None
    except QuotaExceeded as error:
        refused = OverQuota(f"{error}: {name}")
        refused.details = error.over.details()
        raise refused from None


def accept_from_command_line(store: Store, settings: Settings, path: Path, *, owner: str, **asked) -> tuple[int, bool]:
    """`accept_recording` for `transcriber submit` and `transcribe`, which name the file and the
    owner: a path that is no file, or a name no owner has, is refused first. `asked`: the other
    arguments of `accept_recording` (`continue_unfinished` lets a run stopped with Ctrl-C go on
    from its last checkpoint when run again)."""
    if not path.is_file():
        raise IntakeError(f"no such file: {path}")
    return accept_recording(store, settings, path, owner_id=owner_named(store, owner), **asked)


def owner_named(store: Store, owner: str) -> int:
    """The id of the owner a command line names; UnknownOwner when no owner has the name."""
    found = store.owner_by_name(checked_text("owner name", owner))
    if found is None:
        raise UnknownOwner(f"no owner named {owner!r} (create one with: transcriber owner add NAME)")
    owner_id: int = found["id"]
    return owner_id


def _same_bytes(settings: Settings, path: Path) -> SameUpload | None:
    """What makes the file the same as an earlier run's: its SHA-256; None for a file intake
    refuses without reading it (empty, or over the size limit)."""
    if not 0 < path.stat().st_size <= settings.max_upload_bytes:
        return None
    digest = hashlib.sha256()
    for piece in _read(path):
        digest.update(piece)
    return SameUpload(digest.digest())


def _unfinished(store: Store, owner_id: int, sha256: bytes, asked: Asked) -> int | None:
    """The oldest record of these bytes an earlier run left unfinished that no one works on: held
    by no claim, or by a process of this machine that has ended (a killed run's, whose lease is
    ended now rather than waited out). A claim held by a live process, or by one elsewhere, is
    left to it."""
    for row in store.unfinished_uploads(owner_id, sha256, asked):
        if not row["held"] or runtime.end_if_holder_gone(store, row):
            return row["record_id"]
    return None


def _check_audio(settings: Settings, path: Path, name: str) -> tuple[int, float | None]:
    """The file's size and the length it declares, once it is known to hold audio we take."""
    size = path.stat().st_size
    if size == 0:
        raise EmptyFile(f"the file is empty: {name}")
    if size > settings.max_upload_bytes:
        raise TooLarge(f"{size_limit_message(settings)}: {name}")
    try:
        declared = probe(path, max_seconds=settings.max_audio_seconds)
    except TooLong as error:
        raise AudioTooLong(f"audio too long: {name}: {error}") from None
    except UnsupportedStream as error:
        raise UnsupportedAudio(f"unsupported audio: {name}: {error}") from None
    except UndecodableAudio as error:
        raise NotAudio(f"not decodable audio: {name}: {error}") from None
    return size, declared
