"""An uploaded file into the pipeline, the same way for `POST /records` and the OpenAI-compatible
address: spooled to a private temporary file (the decoder probes a file, not a stream), then
accepted by `service.intake` like a file given on the command line. The temporary file is gone
when the call returns, accepted or not."""

import shutil
import tempfile
from pathlib import Path

from fastapi import UploadFile

from db import Store
from service import inputs
from service.config import Settings
from service.intake import accept_file

COPY_BYTES = 1 << 20


def accept_upload(store: Store, settings: Settings, upload: UploadFile, *, owner_id: int, title: str = "",
                  language: str | None = None, prompt: str | None = None) -> int:
    """Accept the uploaded file for the owner; return the new record's id. Raises
    `service.intake.IntakeError` (nothing stored) for input that cannot be accepted."""
    name = inputs.source_name(upload.filename)
    with tempfile.TemporaryDirectory(prefix="transcriber-upload-") as folder:
        path = Path(folder) / "upload"
        with path.open("wb") as out:
            shutil.copyfileobj(upload.file, out, COPY_BYTES)
        return accept_file(store, settings, path, owner_id=owner_id, title=title, source_name=name,
                           language=language, prompt=prompt)
