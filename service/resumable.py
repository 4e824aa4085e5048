"""Resumable uploads (tus 1.0, `web.tus`) on the service's side: what a creation may declare,
the bytes of a request cut into the pieces the store commits, and the end of an upload, which
goes through the one intake (`service.intake.accept_recording`) like any other way in.

An upload's bytes are in the database as they arrive (`db.resumable`); when the last one is in,
they are copied to a private temporary file (the decoder probes a file, and the SHA-256 of the
bytes is taken on the way), checked, and the blob they already are becomes the record's audio:
nothing is stored twice. Bytes intake refuses (not audio, too long, over the quota) are removed
with the upload, and the refusal is the answer. An upload whose last byte is in but whose record
was never made (the process died between the two) is finished by the next request that asks
about it, or by the sweep. Only the finisher that holds the upload copies its bytes
(`db.resumable.finishing`): any other at the same time, in any process, answers at once that
the record is not made yet, or (the request that brought the last byte) waits for its outcome.
One record, never two, and one copy.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

from db import Store
from db.blobs import CHUNK_BYTES
from db.quotas import QuotaExceeded
from db.resumable import NewUpload, PastLength, UploadGone, piece_room
from db.uploads import SameUpload, UploadKeyReused
from service import inputs
from service.config import Settings
from service.intake import (
    IntakeError,
    KeyReused,
    OverQuota,
    TooLarge,
    accept_recording,
    asked_of,
    checked_text,
    size_limit_message,
)

# what Upload-Metadata may name (others are ignored, as tus allows)
METADATA_KEYS = ("filename", "title", "prompt", "language", "speakers")
# a header of metadata holds at most this much text
MAX_METADATA_CHARACTERS = 16_384
# a complete upload no record was made of for this long is finished by the sweep (a request
# that finishes one takes a moment between its last byte and its record)
STRANDED_GRACE_SECONDS = 60.0


class BadMetadata(IntakeError, code="bad_metadata"):
    """Upload-Metadata that is not `key base64,key base64,…` of text."""


# tus's checksum extension: the algorithms a PATCH's Upload-Checksum may name (sha1 is the one
# every server must know)
CHECKSUM_ALGORITHMS = {"md5": hashlib.md5, "sha1": hashlib.sha1, "sha256": hashlib.sha256, "sha512": hashlib.sha512}


class BadChecksum(IntakeError, code="bad_checksum"):
    """Upload-Checksum that is not `<algorithm> <base64 digest>` of an algorithm known here."""


class ChecksumMismatch(IntakeError, code="checksum_mismatch"):
    """The request's bytes do not have the checksum it sent with them; none was stored."""


class Checksum:
    """A request's `Upload-Checksum: <algorithm> <base64 digest>`, to check its whole body against.
    A request that carries one is all or nothing: its bytes are stored only once they all came
    and match (`web.tus`), so a corrupted or cut request stores none of them."""

    def __init__(self, header: str) -> None:
        name, _, encoded = header.strip().partition(" ")
        algorithm = CHECKSUM_ALGORITHMS.get(name.lower())
        if algorithm is None:
            known = ", ".join(CHECKSUM_ALGORITHMS)
            raise BadChecksum(f"Upload-Checksum names an algorithm this server does not know ({known})")
        try:
            self.expected = base64.b64decode(encoded.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise BadChecksum("Upload-Checksum's digest must be base64") from None
        self.digest = algorithm()
        if len(self.expected) != self.digest.digest_size:
            raise BadChecksum(f"Upload-Checksum's digest is not one of {name.lower()}")

    def update(self, data: bytes) -> None:
        self.digest.update(data)

    def check(self) -> None:
        """ChecksumMismatch unless the bytes given so far have the expected digest."""
        if self.digest.digest() != self.expected:
            raise ChecksumMismatch(
                "the bytes do not have the checksum sent with them; none was stored: send them again"
            )


def parse_metadata(header: str | None) -> dict[str, str]:
    """The pairs of an Upload-Metadata header: keys with base64 values (a key alone means an
    empty value); BadMetadata for anything else."""
    if header is None or not header.strip():
        return {}
    if len(header) > MAX_METADATA_CHARACTERS:
        raise BadMetadata(f"Upload-Metadata is longer than {MAX_METADATA_CHARACTERS} characters")
    found: dict[str, str] = {}
    for pair in header.split(","):
        key, _, encoded = pair.strip().partition(" ")
        if not key or " " in encoded.strip() or key in found:
            raise BadMetadata("Upload-Metadata must be `key base64value` pairs separated by commas, each key once")
        try:
            found[key] = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise BadMetadata(f"the value of {key!r} in Upload-Metadata is not base64 of UTF-8 text") from None
    return found


def new_upload(settings: Settings, length: int | None, metadata: dict[str, str], key: str | None) -> NewUpload:
    """What a creation declares, checked the way intake checks an upload's fields (so a bad
    language or prompt is refused before a byte is sent): TooLarge for a length over the limit,
    the intake refusals for the rest."""
    if length is not None and length > settings.max_upload_bytes:
        raise TooLarge(size_limit_message(settings))
    filename = metadata.get("filename")
    title = checked_text("title", metadata.get("title", ""), _title_problem)
    asked = asked_of(
        settings, language=metadata.get("language"), prompt=metadata.get("prompt"), speakers=metadata.get("speakers")
    )
    return NewUpload(
        length=length,
        source_name=inputs.source_name(filename) if filename else "",
        title=title,
        language=asked.language,
        prompt=asked.prompt,
        speakers=metadata.get("speakers") or None,
        key=key,
    )


def _title_problem(title: str) -> str | None:
    """What the records' edit would say of this title (`inputs.Title`), or None."""
    if len(title) > inputs.MAX_TITLE:
        return f"is longer than {inputs.MAX_TITLE} characters"
    return inputs.one_line_problem(title)


def create(store: Store, owner_id: int, new: NewUpload) -> tuple[str, bool]:
    """A new upload (or with the owner's key the one it first made): its id and whether it is
    new. The owner's quota is weighed against the declared length first (an owner's unfinished
    uploads count as stored): OverQuota with nothing made."""
    try:
        store.check_quota(owner_id, None, new.length or 0)
        return store.create_upload(owner_id, new, "application/octet-stream")
    except QuotaExceeded as error:
        refused = OverQuota(str(error))
        refused.details = error.over.details()
        raise refused from None
    except UploadKeyReused:
        raise KeyReused(
            "this Idempotency-Key first created an upload declaring another length or other metadata; "
            "a new upload needs a new key"
        ) from None


@dataclass
class Pieces:
    """A request's bytes as they come, cut into the pieces the store commits: none crosses a
    chunk boundary, none is larger than a chunk, so memory holds at most about one chunk."""

    offset: int
    buffer: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> Iterator[tuple[int, bytes]]:
        """Take `data`; the (offset, piece) pairs now full."""
        self.buffer += data
        while self.buffer and len(self.buffer) >= piece_room(self.offset):
            room = piece_room(self.offset)
            piece = bytes(self.buffer[:room])
            del self.buffer[:room]
            yield self.offset, piece
            self.offset += room

    def rest(self) -> tuple[int, bytes] | None:
        """The bytes not yet handed on (the request ended, or was cut, inside a chunk)."""
        if not self.buffer:
            return None
        piece, at = bytes(self.buffer), self.offset
        self.buffer.clear()
        self.offset += len(piece)
        return at, piece


async def verified(stream: AsyncIterator[bytes], checksum: Checksum, room: int) -> AsyncIterator[bytes]:
    """The bytes of a request sent with its checksum, handed on only once they have all come and
    match it (ChecksumMismatch otherwise, and a cut request hands on nothing): held meanwhile, a
    chunk in memory and the rest in a private temporary file. PastLength, before any is handed
    on, when they are more than `room`."""
    with tempfile.SpooledTemporaryFile(max_size=CHUNK_BYTES) as held:
        async for data in stream:
            if held.tell() + len(data) > room:
                raise PastLength(f"the bytes would go past the {room} the upload has room for; none taken")
            checksum.update(data)
            held.write(data)
        checksum.check()
        held.seek(0)
        while data := held.read(CHUNK_BYTES):
            yield data


def finish(store: Store, settings: Settings, upload_id: str, owner_id: int, *, wait: bool = False) -> int | None:
    """The record of a complete upload, made now through intake unless it was already: its id.
    None while another finisher holds the upload (its bytes are not copied twice), unless `wait`
    waits for that one's outcome. Bytes intake refuses are removed with the upload, and the
    refusal (an IntakeError) raised; UploadGone when there is no such upload."""
    refused: IntakeError | None = None
    with store.finishing(upload_id, owner_id, wait=wait) as finishing:
        if not finishing.held:
            return finishing.record_id
        row = finishing.row
        digest = hashlib.sha256()
        with tempfile.TemporaryDirectory(prefix="transcriber-upload-") as folder:
            path = Path(folder) / "upload"
            with path.open("wb") as out:
                for piece in store.upload_bytes(row["blob_id"]):
                    digest.update(piece)
                    out.write(piece)
            try:
                record_id, _ = accept_recording(
                    store,
                    settings,
                    path,
                    owner_id=owner_id,
                    title=row["title"],
                    source_name=row["source_name"] or None,
                    language=row["language"],
                    prompt=row["prompt"],
                    speakers=row["speakers"],
                    same=SameUpload(digest.digest()),
                    upload=finishing,
                    cut_short=row["cut_short"],
                )
            except IntakeError as error:
                finishing.refuse()
                refused = error
    if refused is not None:
        logger.info("resumable upload {} refused at its end: {}", upload_id[:8], refused.code)
        raise refused
    return record_id


@dataclass(frozen=True)
class SweepCounts:
    """What one pass over the uploads did."""

    cut_short: int
    finished: int
    refused: int
    expired: int


def sweep(store: Store, settings: Settings) -> SweepCounts:
    """Finish the recordings whose uploader went quiet (TRANSCRIBER_RECORDING_IDLE_SECONDS) and
    the complete uploads a dead process left without their record, then remove the uploads idle
    for TRANSCRIBER_UPLOAD_EXPIRY_HOURS. Any number of processes may run it at once: each upload
    is finished once (one another finisher holds is left to it) and removed once."""
    cut = store.cut_idle_recordings(settings.recording_idle_seconds)
    stranded = store.stranded_uploads(STRANDED_GRACE_SECONDS)
    finished = refused = 0
    for row in [*cut, *stranded]:
        try:
            if finish(store, settings, row["id"], row["owner_id"]) is not None:
                finished += 1
        except (IntakeError, UploadGone):
            refused += 1
    expired = store.expire_uploads(settings.upload_expiry_seconds)
    if expired:
        logger.info("swept {} resumable upload(s) idle for {:g} h", expired, settings.upload_expiry_hours)
    return SweepCounts(len(cut), finished, refused, expired)


class Sweeper:
    """`sweep` now and then on a thread of an API process, every few seconds so that a recording
    cut short becomes a record soon after TRANSCRIBER_RECORDING_IDLE_SECONDS (the hourly sweep
    of the workers runs it too). Any number of processes may: each upload is handled once."""

    def __init__(self, store: Store, settings: Settings):
        self.store, self.settings = store, settings
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def every(self) -> float:
        return min(max(self.settings.recording_idle_seconds / 4, 0.5), 10.0)

    def start(self) -> None:
        self._stop.clear()

        def run() -> None:
            while not self._stop.wait(self.every):
                try:
                    sweep(self.store, self.settings)
                except Exception as error:  # noqa: BLE001 - the database is away: the next round tries again
                    logger.warning("resumable uploads' sweep failed ({})", type(error).__name__)

        self._thread = threading.Thread(target=run, name="uploads-sweep", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
