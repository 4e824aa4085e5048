"""The transcript in the formats an owner asks for: txt, srt, vtt and json."""
from __future__ import annotations

import json

FORMATS = ("txt", "srt", "vtt", "json")
MEDIA_TYPES = {"txt": "text/plain; charset=utf-8", "srt": "application/x-subrip; charset=utf-8",
               "vtt": "text/vtt; charset=utf-8", "json": "application/json"}


def _clock(seconds: float, separator: str) -> str:
    millis = int(round(max(seconds, 0.0) * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{millis:03d}"


def render(fmt: str, text: str, segments: list[dict], duration: float | None = None) -> str:
    """The transcript in `fmt`; raises ValueError for a format not in FORMATS."""
    if fmt == "txt":
        return text + "\n" if text else ""
    if fmt == "json":
        return json.dumps({"text": text, "duration_seconds": duration, "segments": segments},
                          ensure_ascii=False)
    if fmt == "srt":
        blocks = [f"{i}\n{_clock(s['start'], ',')} --> {_clock(s['end'], ',')}\n{s['text']}\n"
                  for i, s in enumerate(segments, 1)]
        return "\n".join(blocks)
    if fmt == "vtt":
        blocks = [f"{_clock(s['start'], '.')} --> {_clock(s['end'], '.')}\n{s['text']}\n" for s in segments]
        return "WEBVTT\n\n" + "\n".join(blocks)
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
