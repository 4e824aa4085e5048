"""Voices: the refusals of the owner's changes to them. A voice is the owner's alone: another
owner's voice is answered exactly like a missing one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain.errors import TranscriberError


class VoiceRefusal(TranscriberError):
    """A change to the owner's voices refused; nothing was changed."""


class NoSuchVoice(VoiceRefusal, code="not_found"):
    """No voice of the caller's has that id (none at all, or another owner's)."""


class VoiceNameTaken(VoiceRefusal, code="voice_name_taken"):
    """Another voice of the owner's already has that name (any case)."""


class BadMerge(VoiceRefusal, code="bad_merge"):
    """A merge of a voice into itself, or into no voice of the owner's."""


def voice_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """A voice as listed: id, name, in how many recordings it was named, and its seconds of speech."""
    return {
        "id": row["id"],
        "name": row["name"],
        "recordings": row["recordings"],
        "seconds": round(float(row["seconds"]), 1),
    }
