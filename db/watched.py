"""The watched folder's memory (`transcriber watch`): one row per owner and content, claimed
before its record is made, naming the record once it is. The statements are in
`queries/watched.sql`, the table in migration 0007."""

from __future__ import annotations

from dataclasses import dataclass

from psycopg.rows import DictRow

from db.database import Database
from db.queries import query


@dataclass(frozen=True)
class SeenFile:
    """A settled file as it was hashed: where, its content's SHA-256, and its size and mtime."""

    path: str
    sha256: bytes
    size_bytes: int
    mtime_ns: int


class WatchedFiles:
    """The watched folder's rows; a part of `db.store.Store`."""

    db: Database

    def watched_known(self, owner_id: int, prefix: str) -> list[DictRow]:
        """The owner's rows of files under `prefix` (a folder's path ending with its separator):
        sha256, path, size_bytes, mtime_ns, state."""
        with self.db.connection() as conn:
            return conn.execute(query("watched_known"), {"owner_id": owner_id, "prefix": prefix}).fetchall()

    def claim_watched(self, owner_id: int, seen: SeenFile, holder: str, lease_seconds: float) -> DictRow | None:
        """Claim the content of `seen` for `holder` to accept: None when it is now the holder's
        (seen for the first time), else the content's row as it stands (state, record_id, path,
        holder, lapsed: whether its holder's time ran out)."""
        params = {**self._key(owner_id, seen), **self._where(seen), "holder": holder, "lease_seconds": lease_seconds}
        with self.db.connection() as conn:
            if conn.execute(query("watched_claim"), params).fetchone() is not None:
                return None
            return conn.execute(query("watched_row"), params).fetchone()

    def take_over_watched(
        self, owner_id: int, seen: SeenFile, was: str | None, holder: str, lease_seconds: float
    ) -> bool:
        """Make the content's row, left `accepting` by `was`, the holder's; False when another
        took it first or it is no longer being accepted."""
        params = {
            **self._key(owner_id, seen),
            **self._where(seen),
            "was": was,
            "holder": holder,
            "lease_seconds": lease_seconds,
        }
        with self.db.connection() as conn:
            return conn.execute(query("watched_take_over"), params).fetchone() is not None

    def watched_made(self, owner_id: int, seen: SeenFile) -> int | None:
        """The record of the content made since its row was claimed, if one was (see the query)."""
        with self.db.connection() as conn:
            row = conn.execute(query("watched_made"), self._key(owner_id, seen)).fetchone()
        return None if row is None else int(row["id"])

    def watched_accepted(self, owner_id: int, seen: SeenFile, record_id: int) -> None:
        with self.db.connection() as conn:
            conn.execute(query("watched_accepted"), {**self._key(owner_id, seen), "record_id": record_id})

    def watched_refused(self, owner_id: int, seen: SeenFile, error: str) -> None:
        with self.db.connection() as conn:
            conn.execute(query("watched_refused"), {**self._key(owner_id, seen), "error": error})

    def watched_moved(self, owner_id: int, seen: SeenFile) -> None:
        """The content, its results not written yet, was seen at `seen.path`: they go there."""
        with self.db.connection() as conn:
            conn.execute(query("watched_moved"), {**self._key(owner_id, seen), **self._where(seen)})

    def watched_due(self, owner_id: int, prefix: str, limit: int = 200) -> list[DictRow]:
        """The owner's accepted contents under `prefix` whose results are not written yet, the
        oldest record first: watched_sha256, watched_path and the record's card columns."""
        with self.db.connection() as conn:
            return conn.execute(
                query("watched_due"), {"owner_id": owner_id, "prefix": prefix, "limit": limit}
            ).fetchall()

    def watched_written(self, owner_id: int, sha256: bytes) -> None:
        with self.db.connection() as conn:
            conn.execute(query("watched_written"), {"owner_id": owner_id, "sha256": sha256})

    @staticmethod
    def _key(owner_id: int, seen: SeenFile) -> dict[str, object]:
        return {"owner_id": owner_id, "sha256": seen.sha256}

    @staticmethod
    def _where(seen: SeenFile) -> dict[str, object]:
        return {"path": seen.path, "size_bytes": seen.size_bytes, "mtime_ns": seen.mtime_ns}
