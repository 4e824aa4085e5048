"""The media type of an uploaded recording, told from its first bytes (its container's magic),
so a player gets the right Content-Type whatever the file was called."""

from __future__ import annotations

import mimetypes

GENERIC = "application/octet-stream"


def media_type(head: bytes, name: str = "") -> str:
    """The media type of a file beginning with `head` (16 bytes are plenty), else the one its
    name suggests for audio or video, else the generic one."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head[:4] == b"OggS":
        return "audio/ogg"
    if head[:4] == b"fLaC":
        return "audio/flac"
    if head[4:8] == b"ftyp":
        return "audio/mp4"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "audio/webm"
    if head[:4] == b"FORM" and head[8:12] in (b"AIFF", b"AIFC"):
        return "audio/aiff"
    if head[:5] == b"#!AMR":
        return "audio/amr"
    if head[:3] == b"ID3":
        return "audio/mpeg"
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        # an MPEG audio frame sync; layer bits 00 mark AAC in ADTS framing
        return "audio/aac" if head[1] & 0x06 == 0 else "audio/mpeg"
    guessed, _ = mimetypes.guess_type(name)
    if guessed and guessed.split("/")[0] in ("audio", "video"):
        return guessed
    return GENERIC
