"""Per-owner quotas: how much audio an owner may have transcribed (hours) and how
much original audio it may keep stored (bytes), and the one rule that judges an upload.

An owner's use is what its records hold now: the hours of all its records (a record's measured
length once converted, the length its file declared until then) and the bytes of the originals
still kept (retention and deletion give storage back; converted audio is working space, held
only while a record is recognised, and not counted).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

HOUR = 3600.0
MB = 1024 * 1024


@dataclass(frozen=True)
class Usage:
    """What an owner uses; a figure may be None where its limit is not set (it was not summed)."""

    audio_seconds: float | None
    stored_bytes: int | None


@dataclass(frozen=True)
class Quota:
    """Limits; None: no limit of that kind."""

    seconds: float | None = None
    bytes: int | None = None


@dataclass(frozen=True)
class OverQuota:
    """Why an upload is refused: which limit, what is used, what the upload would add."""

    kind: str  # "hours" or "storage"
    limit: float
    used: float
    adding: float | None

    def message(self) -> str:
        if self.kind == "hours":
            adding = "" if self.adding is None else f" + {self.adding / HOUR:.2f} h in this file"
            return (
                f"quota exceeded: audio hours {self.used / HOUR:.2f} h used{adding}, over the limit of "
                f"{round(self.limit / HOUR, 4):g} h"
            )
        adding_bytes = self.adding or 0  # a storage refusal always knows its file's size
        return (
            f"quota exceeded: storage {self.used / MB:.2f} MB used + {adding_bytes / MB:.2f} MB in this file, "
            f"over the limit of {round(self.limit / MB, 4):g} MB"
        )

    def details(self) -> dict[str, Any]:
        """The same as numbers, in the units the quota is set in (hours, MB)."""
        unit = HOUR if self.kind == "hours" else MB
        return {
            "quota": self.kind,
            "limit": round(self.limit / unit, 6),
            "used": round(self.used / unit, 6),
            "adding": None if self.adding is None else round(self.adding / unit, 6),
            "unit": "hours" if self.kind == "hours" else "MB",
        }


def over_quota(quota: Quota, used: Usage, adding_seconds: float | None, adding_bytes: int) -> OverQuota | None:
    """The limit an upload of `adding_seconds` (None: its length is not declared) and
    `adding_bytes` would pass, or None when it fits. A file of undeclared length is refused on
    hours only once the limit is reached already."""
    if quota.seconds is not None:
        used_seconds = _summed(used.audio_seconds, "audio hours")
        after = used_seconds + (adding_seconds or 0.0)
        if after > quota.seconds or (adding_seconds is None and used_seconds >= quota.seconds):
            return OverQuota("hours", quota.seconds, used_seconds, adding_seconds)
    if quota.bytes is not None:
        used_bytes = _summed(used.stored_bytes, "stored bytes")
        if used_bytes + adding_bytes > quota.bytes:
            return OverQuota("storage", quota.bytes, used_bytes, adding_bytes)
    return None


def _summed(figure: float | None, kind: str) -> float:
    """A figure of the usage whose limit is set: the usage sums every figure that has a limit."""
    if figure is None:
        raise ValueError(f"the {kind} have a limit but were not summed")
    return figure


def usage_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """An owner's use and limits as an owner and the service owner see them (hours, bytes, MB)."""
    return {
        "audio_hours": round(float(row["audio_seconds"]) / HOUR, 4),
        "stored_bytes": int(row["stored_bytes"]),
        "quota": {
            "hours": None if row["quota_seconds"] is None else round(row["quota_seconds"] / HOUR, 6),
            "storage_mb": None if row["quota_bytes"] is None else round(row["quota_bytes"] / MB, 4),
        },
    }
