"""The record card: what an owner (and the operator) sees of a record."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from domain.asked import TRANSCRIBE, TRANSLATE
from domain.speakers import speaker_name


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def links(record_id: int) -> dict[str, str]:
    """The addresses of a record's card and of its text in each format."""
    return {
        "self": f"/records/{record_id}",
        "text": f"/records/{record_id}/text",
        "srt": f"/records/{record_id}/text?format=srt",
        "vtt": f"/records/{record_id}/text?format=vtt",
        "json": f"/records/{record_id}/text?format=json",
    }


def english_link(record_id: int) -> str:
    """The address of a translated record's English text."""
    return f"/records/{record_id}/text?version=english"


def card(row: Mapping[str, Any], now: datetime | None = None) -> dict[str, Any]:
    """The card of a record from the `cards` view: stage, halt flag with reason, attempts, pause
    (the claim, guards and halt of the step its stage waits for)."""
    now = now or datetime.now(UTC)
    retry_after = row["retry_after"]
    waiting = retry_after is not None and retry_after > now and row["halted_at"] is None
    halt = None
    if row["halted_at"] is not None:
        halt = {"at": _iso(row["halted_at"]), "reason": row["halt_reason"], "error": row["halt_error"]}
    record_id = row["id"]
    return {
        "id": record_id,
        "title": row["title"],
        "summary": row["summary"],
        "topics": list(row["topics"]),
        "stage": row["stage"],
        "halt": halt,
        "attempts": row["failures"] or 0,
        "working": row["halted_at"] is None and row["lease_expires_at"] is not None and row["lease_expires_at"] > now,
        "retry_after": _iso(retry_after) if waiting else None,
        "retry_in_seconds": round((retry_after - now).total_seconds(), 1) if waiting else None,
        "created_at": _iso(row["created_at"]),
        "updated_at": _iso(row["updated_at"]),
        "source_name": row["source_name"],
        "duration_seconds": row["duration_seconds"],
        # while a step runs, how far it got; between runs, how far its checkpoints got
        "progress_seconds": row["progress_seconds"]
        if row["progress_seconds"] is not None
        else (row.get("checkpoint_seconds") or None),
        "engine": row["engine"],
        "language": row["language"],
        "language_probability": row.get("language_probability"),
        "prompt": row.get("prompt"),
        # what recognition was asked to write: transcribe, or translate (the English text beside
        # the original, at the `english` link)
        "task": row.get("task") or TRANSCRIBE,
        "links": {**links(record_id), **({"english": english_link(record_id)} if row.get("task") == TRANSLATE else {})},
        # claims of this step whose lease ran out with nothing written (its worker died or hung)
        "lost_leases": row.get("lost_leases") or 0,
        # the original recording: kept, or deleted by retention, and since when
        "audio": "expired" if row.get("audio_expired_at") is not None else "kept",
        "audio_expired_at": _iso(row.get("audio_expired_at")),
        "speakers": speakers(row),
        # the owner's corrections of the text, and those whose segment a new recognition no
        # longer has (kept, and shown where their times fall)
        "corrections": {
            "count": row.get("corrections") or 0,
            "detached": list(row.get("detached_corrections") or []),
        },
        # made of a recording whose uploader went quiet before it stopped: the part that arrived
        "cut_short": bool(row.get("cut_short")),
    }


def finished(c: Mapping[str, Any]) -> bool:
    """Nothing more will come for the record of card `c`: halted, or done with its speakers
    found, halted or not wanted (a record is done before its speakers are)."""
    return bool(c["halt"]) or (c["stage"] == "done" and c["speakers"]["state"] != "pending")


def speakers(row: Mapping[str, Any]) -> dict[str, Any]:
    """Where who-spoke-when stands: pending (asked for, not found yet), done, halted (the text is
    served without speakers; reason and error say why) or off (not asked for, or the service
    does not diarize). `asked`: auto, off or a number; `names`: the owner's; `list`: each speaker
    as shown (`speaker_view`)."""
    asked = row.get("speakers_wanted", "auto")
    view = {
        "state": "off",
        "reason": None,
        "error": None,
        "asked": asked,
        "names": dict(row.get("speaker_names") or {}),
        "list": [speaker_view(speaker) for speaker in row.get("speaker_list") or ()],
    }
    if row.get("speakers_halt_reason"):
        return {
            **view,
            "state": "halted",
            "reason": row["speakers_halt_reason"],
            "error": row.get("speakers_halt_error"),
        }
    if row.get("speakers_found"):
        return {**view, "state": "done"}
    if row.get("speakers_queued"):
        return {**view, "state": "pending", "attempts": row.get("speakers_failures", 0)}
    if asked == "off":
        return {**view, "reason": "not_asked"}
    if row["stage"] != "done" and row["halted_at"] is None:
        return {**view, "state": "pending"}
    return {**view, "reason": "not_diarized"}  # TRANSCRIBER_DIARIZE=off or the extra not installed


def speaker_view(speaker: Mapping[str, Any]) -> dict[str, Any]:
    """A record speaker as the card shows it (a row of the `speaker_list` the store reads):
    `label`; `name`, the one shown everywhere (the owner's, else the matched voice's unless
    rejected, else "Speaker N"); `given`, the owner's own or null; `voice`, the owner's voice the
    pipeline matched ({id, name, score}) or null; `rejected`, whether the owner said it is not."""
    label = speaker["label"]
    shown = {label: speaker["name"]} if speaker.get("name") else None
    return {
        "label": label,
        "name": speaker_name(label, shown),
        "given": speaker.get("given"),
        "voice": speaker.get("voice"),
        "rejected": bool(speaker.get("rejected")),
    }
