"""What a reader sees for a record's speaker."""

from __future__ import annotations


def speaker_name(label: str, names: dict[str, str] | None = None) -> str:
    """A speaker as shown: its name in `names` (the owner's, else its matched voice's: the store
    reads them as one map, `shown_speaker_names`), else "Speaker N"."""
    given = (names or {}).get(label)
    return given or f"Speaker {label.removeprefix('S')}"
