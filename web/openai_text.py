"""The answers of the OpenAI-compatible addresses (`web.openai_compat`): a done record's text in
the response format asked for, with the fields OpenAI's `verbose_json` has."""

import math

from fastapi.responses import JSONResponse, Response

from audio.formats import MEDIA_TYPES, labelled_segments, render_record, shown_speakers
from domain.asked import TRANSCRIBE


def _segment(number: int, segment: dict) -> dict:
    """A segment as OpenAI's verbose_json gives it (fields this engine has no value for are
    given their neutral value)."""
    return {
        "id": number,
        "seek": 0,
        "start": segment["start"],
        "end": segment["end"],
        "text": segment["text"],
        "tokens": [],
        "temperature": 0.0,
        "avg_logprob": segment.get("avg_logprob", 0.0),
        "compression_ratio": segment.get("compression_ratio", 1.0),
        "no_speech_prob": segment.get("no_speech_prob", 0.0),
        **({"speaker": segment["speaker"]} if segment.get("speaker") else {}),
    }


def openai_text_response(
    response_format: str, row: dict, words: bool, segments_wanted: bool, task: str = TRANSCRIBE
) -> Response:
    """The done record's text (its English one, for `task` translate) in the OpenAI response
    format asked for."""
    text, segments, duration = row["transcript"] or "", labelled_segments(row), row["duration_seconds"]
    if response_format == "json":
        usage = {"type": "duration", "seconds": math.ceil(duration or 0)}
        return JSONResponse({"text": text, "usage": usage})
    if response_format == "verbose_json":
        body = {"task": task, "language": row.get("language") or "", "duration": duration, "text": text}
        if segments_wanted or not words:
            body["segments"] = [_segment(i, s) for i, s in enumerate(segments)]
        shown = shown_speakers(segments, row.get("speaker_names"))
        if shown:  # the segments and words carry labels: what each is shown as, as everywhere
            body["speakers"] = shown
        if words:
            body["words"] = [
                {
                    "word": w["word"].strip(),
                    "start": w["start"],
                    "end": w["end"],
                    **({"speaker": w["speaker"]} if w.get("speaker") else {}),
                }
                for s in segments
                for w in s.get("words") or ()
                if w["word"].strip()
            ]
        return JSONResponse(body)
    fmt = "txt" if response_format == "text" else response_format
    return Response(render_record(fmt, row), media_type=MEDIA_TYPES[fmt])
