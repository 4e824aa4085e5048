"""The diarize step's own reads, and the owner's names for the speakers. The step is claimed,
checkpointed, saved, failed and halted by the protocol every step shares (`db.pipeline`)."""

from __future__ import annotations

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from db.database import Database
from db.queries import query
from db.voices import lock_owner_voices, rename_speakers


class Speakers:
    """Speaker embeddings checkpointed so far, and speaker names; a part of `db.store.Store`."""

    db: Database

    def speaker_windows(self, record_id: int, up_to: float) -> list[DictRow]:
        """The embeddings checkpointed up to `up_to` seconds, in recording order."""
        with self.db.connection() as conn:
            return conn.execute(query("speaker_windows"), {"id": record_id, "up_to": up_to}).fetchall()

    def name_speakers(self, record_id: int, owner_id: int, names: dict[str, str | None]) -> bool:
        """The owner's names for speaker labels, merged into the earlier ones ("" or None takes a
        name away), and the owner's voices following them (`db.voices.rename_speakers`); False
        when the owner has no such record."""
        names = {label: (name or None) for label, name in names.items()}
        with self.db.transaction() as conn:
            lock_owner_voices(conn, owner_id)
            row = conn.execute(
                query("name_speakers"), {"id": record_id, "owner_id": owner_id, "names": Jsonb(names)}
            ).fetchone()
            if row is not None:
                rename_speakers(conn, record_id, owner_id, names)
        return row is not None
