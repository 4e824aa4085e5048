"""The facts `transcriber check` judges, read from the whole database in one snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime

from psycopg.rows import DictRow

from db.database import Database
from db.queries import query
from db.rows import DictConnection, only_row
from domain.invariants import Row, Snapshot

BATCH = 2000


class Facts:
    """Reads for the invariant checker; all of them see one repeatable-read snapshot."""

    def __init__(self, db: Database):
        self.db = db

    def read(self, grace_seconds: float, on_record: Callable[[Row, datetime], None]) -> Snapshot:
        """Call `on_record(row, now)` for every record (streamed, never all in memory at once) and
        return the snapshot's time, the orphaned blobs, the records pointing at incomplete
        audio, the records whose windows do not run end to end, and the saves made twice."""
        with self.db.transaction() as conn:
            conn.execute(query("check_snapshot"))
            now: datetime = only_row(conn.execute(query("check_now")))["now"]
            for row in self._records(conn):
                on_record(row, now)
            orphans = conn.execute(query("check_orphan_blobs"), {"grace_seconds": grace_seconds}).fetchall()
            incomplete = conn.execute(query("check_incomplete_audio")).fetchall()
            windows = conn.execute(query("check_windows")).fetchall()
            saved_twice = conn.execute(query("check_saved_twice")).fetchall()
        return {
            "now": now,
            "orphan_blobs": orphans,
            "incomplete_audio": incomplete,
            "windows": windows,
            "saved_twice": saved_twice,
        }

    @staticmethod
    def _records(conn: DictConnection) -> Iterator[DictRow]:
        with conn.cursor(name="check_records") as cursor:
            cursor.itersize = BATCH
            cursor.execute(query("check_records"))
            yield from cursor
