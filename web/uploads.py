"""An uploaded file into the pipeline, the same way for `POST /records` and the OpenAI-compatible
address: spooled to a private temporary file (the decoder probes a file, not a stream) with the
SHA-256 of its bytes taken on the way, then accepted by `service.intake.accept_recording` like a
file given on the command line, once per intended upload (`db.uploads`). The temporary file is
gone when the call returns, accepted or not."""

import hashlib
import tempfile
from pathlib import Path

from fastapi import UploadFile

from db import Store
from db.uploads import SameUpload
from service import inputs
from service.config import Settings
from service.intake import accept_recording

COPY_BYTES = 1 << 20


def spool_and_accept(
    store: Store,
    settings: Settings,
    upload: UploadFile,
    *,
    owner_id: int,
    key: str | None = None,
    attach_in_flight: bool = False,
    **asked,
) -> tuple[int, bool]:
    """`accept_recording` for a file that comes as an HTTP upload: the record's id, and whether
    it is new (False: the owner's `key`, or with `attach_in_flight` the same bytes in the
    pipeline, name an earlier upload). `asked`: what the upload asks for (title, language,
    prompt, speakers). Raises `service.intake.IntakeError` (nothing stored) for input that
    cannot be accepted."""
    name = inputs.source_name(upload.filename)
    digest = hashlib.sha256()
    with tempfile.TemporaryDirectory(prefix="transcriber-upload-") as folder:
        path = Path(folder) / "upload"
        with path.open("wb") as out:
            while piece := upload.file.read(COPY_BYTES):
                digest.update(piece)
                out.write(piece)
        same = SameUpload(digest.digest(), key=key, attach_in_flight=attach_in_flight)
        return accept_recording(store, settings, path, owner_id=owner_id, source_name=name, same=same, **asked)
