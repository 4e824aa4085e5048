"""Accepting a recording, for the CLI and the HTTP API alike: bad input gets a clear error and
nothing is stored; accepted input is stored whole, with its record, in one transaction."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator

from audio.decode import TooLong, UndecodableAudio, UnsupportedStream, probe
from db import Store
from db.quotas import QuotaExceeded
from db.uploads import SameUpload, UploadKeyReused
from service import inputs, runtime
from service.config import Settings

READ_BYTES = 1 << 20


class IntakeError(Exception):
    """The input cannot be accepted; nothing was stored."""

    status = 400
    code = "bad_input"
    details: dict = {}  # fields a JSON answer adds beside the message


class EmptyFile(IntakeError):
    status = 415
    code = "empty_file"


class TooLarge(IntakeError):
    status = 413
    code = "too_large"


class NotAudio(IntakeError):
    status = 415
    code = "not_audio"


class AudioTooLong(IntakeError):
    status = 413
    code = "audio_too_long"


class UnsupportedAudio(IntakeError):
    status = 415
    code = "unsupported_audio"


class KeyReused(IntakeError):
    status = 422
    code = "idempotency_key_reused"


class OverQuota(IntakeError):
    """The upload would pass a limit of its owner's quota (`transcriber owner quota`)."""

    status = 413
    code = "quota_exceeded"


class UnknownOwner(IntakeError):
    code = "unknown_owner"


class BadLanguage(IntakeError):
    status = 422
    code = "bad_language"


class BadText(IntakeError):
    code = "bad_text"


class BadPrompt(IntakeError):
    status = 422
    code = "bad_prompt"


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


class BadSpeakers(IntakeError):
    code = "bad_speakers"


def checked_speakers(speakers: str | int | None) -> str:
    """What the upload asks of diarization (auto, off or a number); BadSpeakers otherwise."""
    try:
        return inputs.speakers_wanted(speakers)
    except ValueError as error:
        raise BadSpeakers(str(error)) from None


def checked_text(field: str, value: str) -> str:
    """`value` if the database can store it as the record's `field`; BadText otherwise."""
    problem = inputs.text_problem(value)
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
        raise BadLanguage(f"the model {settings.whisper_model} knows English only; "
                          "set TRANSCRIBER_WHISPER_MODEL=base for other languages")
    return code


def size_limit_message(settings: Settings) -> str:
    limit = settings.max_upload_bytes // (1024 * 1024)
    return f"the file is larger than the limit of {limit} MB (TRANSCRIBER_MAX_UPLOAD_MB)"


def _read(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while piece := handle.read(READ_BYTES):
            yield piece


def accept_file(store: Store, settings: Settings, path: Path, *, owner_id: int, title: str = "",
                source_name: str | None = None, language: str | None = None, prompt: str | None = None,
                speakers: str | None = None) -> int:
    """Check the file at `path` holds decodable audio and accept it; return the record id."""
    return accept_once(store, settings, path, owner_id=owner_id, title=title, source_name=source_name,
                       language=language, prompt=prompt, speakers=speakers)[0]


def accept_once(store: Store, settings: Settings, path: Path, *, owner_id: int, title: str = "",
                source_name: str | None = None, language: str | None = None, prompt: str | None = None,
                same: SameUpload | None = None, speakers: str | int | None = None,
                continue_unfinished: bool = False) -> tuple[int, bool]:
    """Accept the file at `path` unless `same` names an earlier upload it repeats, or (with
    `continue_unfinished`) an earlier run left the same bytes unfinished (then that record,
    found before the file is probed or stored again): the record id, and whether it is new. The
    same key with other bytes is KeyReused, with nothing stored."""
    name = inputs.source_name(source_name or path.name)
    title = checked_text("title", title)
    language = checked_language(settings, language)
    prompt = checked_prompt(prompt)
    speakers = checked_speakers(speakers)
    try:
        earlier = None if same is None else store.earlier_upload(owner_id, same)
        if earlier is None and continue_unfinished and same is not None:
            earlier = _unfinished(store, owner_id, same.sha256, prompt=prompt, speakers=speakers, language=language)
        if earlier is not None:
            return earlier, False
        size, declared = _check_audio(settings, path, name)
        return store.accept_once(owner_id, _read(path), title=title or Path(name).stem, source_name=name,
                                 language=language, prompt=prompt, declared_seconds=declared,
                                 expected_bytes=size, same=same, speakers=speakers)
    except UploadKeyReused:
        raise KeyReused("this Idempotency-Key was first sent with other bytes; "
                        "a new upload needs a new key") from None
    except QuotaExceeded as error:
        refused = OverQuota(f"{error}: {name}")
        refused.details = error.over.details()
        raise refused from None


def _unfinished(store: Store, owner_id: int, sha256: bytes, **asked) -> int | None:
    """The oldest record of these bytes an earlier run left unfinished that no one works on: held
    by no claim, or by a process of this machine that has ended (a killed run's, whose lease is
    ended now rather than waited out). A claim held by a live process, or by one elsewhere, is
    left to it."""
    for row in store.unfinished_uploads(owner_id, sha256, **asked):
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


def submit_file(store: Store, settings: Settings, path: Path, *, owner: str, title: str = "",
                language: str | None = None, prompt: str | None = None, speakers: str | None = None) -> int:
    """Accept the file at `path` for the owner called `owner`; return the new record's id."""
    return accept_file(store, settings, path, owner_id=_file_owner(store, path, owner), title=title,
                       language=language, prompt=prompt, speakers=speakers)


def submit_or_continue(store: Store, settings: Settings, path: Path, *, owner: str, language: str | None = None,
                       prompt: str | None = None, speakers: str | None = None) -> tuple[int, bool]:
    """`transcriber transcribe`'s intake: the record an earlier run left unfinished with the same
    bytes, asked for alike (so a run stopped with Ctrl-C goes on from its last checkpoint when
    run again), or else a new one; the record id, and whether it is new. The bytes' SHA-256 is
    kept with a new record, so that a later run finds it."""
    owner_id = _file_owner(store, path, owner)
    same = None
    if 0 < path.stat().st_size <= settings.max_upload_bytes:  # else refused below, unread
        digest = hashlib.sha256()
        for piece in _read(path):
            digest.update(piece)
        same = SameUpload(digest.digest())
    return accept_once(store, settings, path, owner_id=owner_id, language=language, prompt=prompt,
                       speakers=speakers, same=same, continue_unfinished=True)


def _file_owner(store: Store, path: Path, owner: str) -> int:
    """The id of the owner called `owner`, once `path` is known to be a file."""
    if not path.is_file():
        raise IntakeError(f"no such file: {path}")
    found = store.owner_by_name(checked_text("owner name", owner))
    if found is None:
        raise UnknownOwner(f"no owner named {owner!r} (create one with: transcriber owner add NAME)")
    return found["id"]
