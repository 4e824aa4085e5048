"""Voices: the refusals of the owner's changes to them. A voice is the owner's alone: another
owner's voice is answered exactly like a missing one."""

from __future__ import annotations

from domain.errors import TranscriberError


class NoSuchVoice(TranscriberError, code="not_found"):
    """No voice of the caller's has that id (none at all, or another owner's)."""


class VoiceNameTaken(TranscriberError, code="voice_name_taken"):
    """Another voice of the owner's already has that name (any case)."""


class BadMerge(TranscriberError, code="bad_merge"):
    """A merge of a voice into itself."""
