"""The steps, each with the fields it owns: the only columns its save may write (P3)."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from audio.decode import BYTES_PER_SECOND, PCM_MEDIA_TYPE, UndecodableAudio, pcm16k
from audio.engines import engine
from db import Store
from domain.claims import HaltReason, PermanentStepError
from domain.stages import Step
from transcriber.config import Settings

Beat = Callable[..., None]


def convert(store: Store, record: dict, beat: Beat, settings: Settings) -> dict:
    """Decode the original (any container FFmpeg knows) into 16 kHz mono PCM, streamed.

    The original is spooled to a local temporary file first, because some containers (m4a with
    its index at the end) can only be read with seeking.
    """
    with tempfile.TemporaryDirectory(prefix="transcriber-") as folder:
        original = Path(folder) / "original"
        with original.open("wb") as handle:
            for chunk in store.read_blob(record["original_blob_id"]):
                handle.write(chunk)
                beat()
        if original.stat().st_size == 0:
            # intake never accepts an empty file: this is storage gone wrong, worth a retry
            raise RuntimeError("the original audio is missing from storage")
        done = 0.0

        def pieces():
            nonlocal done
            for piece in pcm16k(original):
                done += len(piece) / BYTES_PER_SECOND
                beat(done)
                yield piece

        try:
            blob_id, size = store.store_blob(pieces(), PCM_MEDIA_TYPE)
        except UndecodableAudio as error:
            raise PermanentStepError(HaltReason.UNDECODABLE_AUDIO, str(error)) from None
    return {"converted_blob_id": blob_id, "duration_seconds": size / BYTES_PER_SECOND}


def discard_converted(store: Store, fields: dict) -> None:
    """A refused conversion leaves no orphan audio behind."""
    store.delete_blob(fields["converted_blob_id"])


def recognize(store: Store, record: dict, beat: Beat, settings: Settings) -> dict:
    """Speech to text with timed segments, fed from the converted audio piece by piece."""
    recognizer = engine(settings.engine)
    fed = 0

    def pcm():
        nonlocal fed
        for chunk in store.read_blob(record["converted_blob_id"]):
            fed += len(chunk)
            yield chunk

    result = recognizer.transcribe(pcm(), beat)
    if fed == 0:
        raise RuntimeError("the converted audio is missing from storage")
    return {"transcript": result.text, "segments": result.segments, "engine": recognizer.name}


@dataclass(frozen=True)
class StepSpec:
    run: Callable[[Store, dict, Beat, Settings], dict]
    owns: frozenset[str]
    discard: Callable[[Store, dict], None] = lambda store, fields: None


STEPS = {
    Step.CONVERT: StepSpec(convert, frozenset({"converted_blob_id", "duration_seconds"}), discard_converted),
    Step.RECOGNIZE: StepSpec(recognize, frozenset({"transcript", "segments", "engine"})),
}
