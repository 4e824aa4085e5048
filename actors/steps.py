"""The convert and recognize steps: the work each does on a claimed record, and the fields it
returns, the only columns its save may write (P3)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from actors.heartbeat import Heartbeat
from audio.decode import BYTES_PER_SECOND, PCM_MEDIA_TYPE, TooLong, UndecodableAudio, pcm16k
from audio.engines import engine
from audio.windows import end_of, start_byte, windows
from db import Store
from domain.asked import TRANSLATE, task_of
from domain.claims import HaltReason, PermanentStepError
from service import metrics
from service.config import Settings
from service.meaning import record_passages


def spool_original(store: Store, blob_id: int, folder: Path, beat: Callable[[], None]) -> Path:
    """The original audio copied to a file in `folder` (a decoder may need to seek in it)."""
    original = folder / "original"
    with original.open("wb") as handle:
        for chunk in store.read_blob(blob_id):
            handle.write(chunk)
            beat()
    return original


def convert(store: Store, record: dict, beat: Heartbeat, settings: Settings) -> dict:
    """Decode the original (any container FFmpeg knows) into 16 kHz mono PCM, streamed.

    The original is spooled to a local temporary file first, because some containers (m4a with
    its index at the end) can only be read with seeking. The PCM is stored as it is decoded, in
    committed chunks written under the claim (a stale converter is stopped at its next chunk);
    it becomes usable once complete, right before the save that points the record at it.
    """
    with tempfile.TemporaryDirectory(prefix="transcriber-") as folder:
        original = spool_original(store, record["original_blob_id"], Path(folder), beat)
        if original.stat().st_size == 0:
            # intake never accepts an empty file: this is storage gone wrong, worth a retry
            raise RuntimeError("the original audio is missing from storage")
        done = 0.0

        def pieces():
            nonlocal done
            for piece in pcm16k(original, max_seconds=settings.max_audio_seconds):
                done += len(piece) / BYTES_PER_SECOND
                beat(done)
                yield piece

        try:
            blob_id, size = store.store_blob(pieces(), PCM_MEDIA_TYPE, writer=beat.claim)
        except UndecodableAudio as error:
            raise PermanentStepError(HaltReason.UNDECODABLE_AUDIO, str(error)) from None
        except TooLong as error:  # its declaration lied, or it came in before the cap was lowered
            raise PermanentStepError(HaltReason.AUDIO_TOO_LONG, str(error)) from None
    return {"converted_blob_id": blob_id, "duration_seconds": size / BYTES_PER_SECOND}


def discard_converted(store: Store, fields: dict) -> None:
    """A refused conversion leaves no orphan audio behind (deleted in bounded batches)."""
    store.delete_blob(fields["converted_blob_id"])


def language_for(record: dict, settings: Settings) -> str | None:
    """The language to recognise a record in: the one it carries (asked for at intake, or used
    by an earlier window), else the service's default; None lets the engine detect it."""
    from audio.models import english_only

    language = record.get("language") or settings.language
    if settings.engine == "faster-whisper" and english_only(settings.whisper_model):
        return "en"
    return None if language == "auto" else language


def recognize(store: Store, record: dict, beat: Heartbeat, settings: Settings) -> dict:
    """Speech to text, window by window from the last checkpoint on.

    Each window's segments are saved under the claim's token as it is done (a checkpoint), so a
    record taken over after a crash or a resume goes on where it stood and recognises no window
    twice. The language detected in the first window holds for the rest. The owner's prompt,
    if the record has one, is given with every window (the same each time: never the previous
    window's text, so a window's text does not depend on the ones before it). A record asked
    to translate has each window translated to English right after, saved by the same
    checkpoint beside its original text (`record_windows.english`).
    """
    recognizer = engine(settings)
    language = language_for(record, settings)
    translating = task_of(record.get("asked")) == TRANSLATE
    done = record["checkpoint_seconds"]
    beat(done)
    pcm = store.read_blob(record["converted_blob_id"], start_byte=start_byte(done))
    started, first = time.monotonic(), done
    for at, window in windows(pcm, done):
        result = recognizer.recognize(window, language, beat, prompt=record.get("prompt"))
        # detected in this window (none was asked for or found before): how sure, saved with it
        sureness = result.language_probability if language is None else None
        language = language or result.language
        end = end_of(at, window)
        segments = [_shifted(segment, at) for segment in result.segments]
        english = None
        if translating:
            # the same window again, told its language (detection on a second decoding could
            # differ), in English; without the owner's prompt, which is in the speech's language
            translated = recognizer.recognize(window, language, beat, task=TRANSLATE)
            english = [_shifted(segment, at) for segment in translated.segments]
        beat.checkpoint(
            at,
            end,
            {
                "segments": segments,
                "english": english,
                "language": language,
                "language_probability": sureness,
                "suppressed": [_shifted_span(span, at) for span in result.suppressed],
            },
            {"segments": len(segments)},
        )
        done = end
    metrics.recognised(done - first, time.monotonic() - started)
    if done == 0:
        raise RuntimeError("the converted audio is missing from storage")
    # the save that reaches done assembles the text from the windows saved above, and makes the
    # text's passages for search by meaning from the embeddings computed here, before it
    return {"engine": recognizer.name, "passages": record_passages(store, record["id"], language)}


def _shifted(segment: dict, offset: float) -> dict:
    """A window's segment timed from the recording's start."""

    def at(seconds: float) -> float:
        return round(seconds + offset, 3)

    return {
        **segment,
        "start": at(segment["start"]),
        "end": at(segment["end"]),
        "words": [{**w, "start": at(w["start"]), "end": at(w["end"])} for w in segment.get("words", [])],
    }


def _shifted_span(span: dict, offset: float) -> dict:
    """A suppressed span (audio.guards.suppress) timed from the recording's start."""
    return {**span, "start": round(span["start"] + offset, 3), "end": round(span["end"] + offset, 3)}
