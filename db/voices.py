"""The owner's voices: what the diarize step reads to match a record's speakers, and the owner's
naming (which enrols a named speaker's print in the voice of that name), rejecting, renaming,
merging and deleting. The statements are in `queries/voices.sql`; the match itself is saved by
the diarize step's fenced save (`save_diarize`), never here.

Each write of an owner's voices holds that owner's voice lock to its end, so a voice that one
leaves without samples (it is then deleted) never takes with it a sample another is adding.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from db.database import Database
from db.queries import query
from db.rows import DictConnection
from domain.voices import BadMerge, NoSuchVoice, VoiceNameTaken


class Voices:
    """The owner's voices; a part of `db.store.Store`."""

    db: Database

    def voice_samples(self, owner_id: int) -> list[DictRow]:
        """The samples of each of the owner's voices (voice_id, centroid, seconds), a voice's together."""
        with self.db.connection() as conn:
            return conn.execute(query("voice_samples"), {"owner_id": owner_id}).fetchall()

    def rejected_matches(self, record_id: int) -> set[tuple[str, int]]:
        """The (label, voice id) pairs the record's owner rejected."""
        with self.db.connection() as conn:
            rows = conn.execute(query("rejected_matches"), {"id": record_id}).fetchall()
        return {(row["label"], row["voice_id"]) for row in rows}

    def reject_matches(self, record_id: int, owner_id: int, labels: Collection[str]) -> bool:
        """The owner rejects the voices matched to `labels` of the record; False when the owner
        has no such record."""
        with self.db.transaction() as conn:
            row = conn.execute(
                query("reject_matches"), {"id": record_id, "owner_id": owner_id, "labels": list(labels)}
            ).fetchone()
        return row is not None

    def voices(self, owner_id: int) -> list[DictRow]:
        """The owner's voices by name: id, name, recordings, seconds."""
        with self.db.connection() as conn:
            return conn.execute(query("list_voices"), {"owner_id": owner_id}).fetchall()

    def rename_voice(self, owner_id: int, voice_id: int, name: str) -> None:
        """Rename the owner's voice (the speakers named with it follow). NoSuchVoice, VoiceNameTaken."""
        with self.db.transaction() as conn:
            lock_owner_voices(conn, owner_id)
            holder = conn.execute(query("voice_name_holder"), {"owner_id": owner_id, "name": name}).fetchone()
            if holder is not None and holder["id"] != voice_id:
                _owner_voice(conn, owner_id, voice_id)  # a missing voice is not found before a name is taken
                raise VoiceNameTaken(f"another voice is named {name!r}")
            if (
                conn.execute(query("rename_voice"), {"owner_id": owner_id, "id": voice_id, "name": name}).fetchone()
                is None
            ):
                raise NoSuchVoice("no such voice")

    def delete_voice(self, owner_id: int, voice_id: int) -> None:
        """Delete the owner's voice: its samples, its matches and the rejections of it go; the
        records keep their own names. NoSuchVoice."""
        with self.db.transaction() as conn:
            lock_owner_voices(conn, owner_id)
            if conn.execute(query("delete_voice"), {"owner_id": owner_id, "id": voice_id}).fetchone() is None:
                raise NoSuchVoice("no such voice")

    def merge_voice(self, owner_id: int, voice_id: int, into: int) -> None:
        """Merge the owner's voice into another of the owner's: its samples, matches and
        rejections become the other's, its speakers take the other's name, and it goes.
        NoSuchVoice (no such voice of the owner's), BadMerge (into itself, or into no voice of
        the owner's: another owner's is answered like a missing one); nothing changed then."""
        with self.db.transaction() as conn:
            lock_owner_voices(conn, owner_id)
            _owner_voice(conn, owner_id, voice_id)
            if voice_id == into:
                raise BadMerge("a voice cannot be merged into itself")
            if conn.execute(query("owner_voice"), {"owner_id": owner_id, "id": into}).fetchone() is None:
                raise BadMerge(f"there is no voice {into} to merge into")
            params = {"owner_id": owner_id, "id": voice_id, "into": into}
            conn.execute(query("merge_voice_samples"), params)
            conn.execute(query("merge_voice_matches"), params)
            conn.execute(query("delete_voice"), params)


def rename_speakers(conn: DictConnection, record_id: int, owner_id: int, names: Mapping[str, str | None]) -> None:
    """The voices follow the owner's naming of the owner's record's speakers (in the naming's
    transaction, after `lock_owner_voices`): a speaker renamed or unnamed leaves the voice it was
    a sample of (a voice left with none goes); a speaker named, if it has a print, becomes a
    sample of the owner's voice of that name, made if there is none."""
    params = {"id": record_id, "owner_id": owner_id, "labels": list(names), "names": Jsonb(dict(names))}
    left = [row["voice_id"] for row in conn.execute(query("unenrol_speakers"), params).fetchall()]
    conn.execute(query("add_named_voices"), params)
    conn.execute(query("enrol_speakers"), params)
    drop_empty_voices(conn, left)


def record_voices(conn: DictConnection, record_id: int) -> list[int]:
    """Before a record is erased: its owner's voices locked, and the voices its speakers are
    samples of (pass them to `drop_empty_voices` once it is gone)."""
    conn.execute(query("lock_record_owner_voices"), {"id": record_id})
    return [row["voice_id"] for row in conn.execute(query("record_voices"), {"id": record_id}).fetchall()]


def drop_empty_voices(conn: DictConnection, voice_ids: list[int]) -> None:
    """The voices among `voice_ids` left without a sample go."""
    if voice_ids:
        conn.execute(query("drop_empty_voices"), {"ids": voice_ids})


def lock_owner_voices(conn: DictConnection, owner_id: int) -> None:
    """The owner's voice writes wait for this transaction's end (taken before any row lock)."""
    conn.execute(query("lock_owner_voices"), {"owner_id": owner_id})


def _owner_voice(conn: DictConnection, owner_id: int, voice_id: int) -> DictRow:
    row = conn.execute(query("owner_voice"), {"owner_id": owner_id, "id": voice_id}).fetchone()
    if row is None:
        raise NoSuchVoice("no such voice")
    return row
