"""Per-owner quotas and the retention of original audio; the rules are in
`domain.quotas`, the statements in `queries/quotas.sql` and `queries/retention.sql`.

An upload is weighed twice: before its bytes are stored (a cheap read, so that an upload clearly
over the limit stores nothing at all) and in the transaction that accepts it, with the owner's
row locked, so that two uploads racing at the limit cannot both pass.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass

from loguru import logger
from psycopg.rows import DictRow

from db.blobs import CHUNK_BYTES, DELETE_BATCH_CHUNKS, discard_blob
from db.database import Database
from db.journal import record_log
from db.queries import query
from db.rows import DictConnection, only_row
from domain.errors import TranscriberError
from domain.quotas import OverQuota, Quota, Usage, over_quota

# records expired per statement: one short transaction each
EXPIRY_BATCH = 500


class _Keep(enum.Enum):
    """A limit left out of `set_quota`: unchanged (None sets no limit)."""

    KEEP = enum.auto()


_KEEP = _Keep.KEEP


class QuotaExceeded(TranscriberError, code="quota_exceeded"):
    """The upload would pass one of its owner's limits; nothing was stored."""

    def __init__(self, over: OverQuota) -> None:
        super().__init__(over.message())
        self.over = over


@dataclass(frozen=True)
class ExpiryPass:
    """What one bounded run of the retention sweep did, and whether due records are left."""

    expired: int
    more: bool


def _judge(row: DictRow | None, used: DictRow | None, adding_seconds: float | None, adding_bytes: int) -> None:
    if row is None or used is None:  # no such owner (any more)
        return
    quota = Quota(row["quota_seconds"], row["quota_bytes"])
    if quota.seconds is None and quota.bytes is None:
        return
    usage = Usage(used["audio_seconds"], used["stored_bytes"])
    over = over_quota(quota, usage, adding_seconds, adding_bytes)
    if over is not None:
        raise QuotaExceeded(over)


def hold_quota(conn: DictConnection, owner_id: int, adding_seconds: float | None, adding_bytes: int) -> None:
    """Inside the accepting transaction: lock the owner's intake and refuse (QuotaExceeded) an
    upload that would pass a limit, its use summed after the lock with a fresh snapshot."""
    row = conn.execute(query("hold_owner_quota"), {"owner_id": owner_id}).fetchone()
    if row is None or (row["quota_seconds"] is None and row["quota_bytes"] is None):
        return
    used = conn.execute(query("owner_usage"), {"owner_id": owner_id, "always": False}).fetchone()
    _judge(row, used, adding_seconds, adding_bytes)


def check_quota(db: Database, owner_id: int, adding_seconds: float | None, adding_bytes: int) -> None:
    """The early weighing, before anything is stored (QuotaExceeded); not a guarantee."""
    with db.connection() as conn:
        used = conn.execute(query("owner_usage"), {"owner_id": owner_id, "always": False}).fetchone()
    _judge(used, used, adding_seconds, adding_bytes)


class Quotas:
    """Quotas, use and retention; a part of `db.store.Store`."""

    db: Database

    def set_quota(
        self, name: str, *, seconds: float | _Keep | None = _KEEP, size_bytes: int | _Keep | None = _KEEP
    ) -> bool:
        """Set the owner's limits (None: no limit; left out: unchanged); False: no such owner."""
        with self.db.transaction() as conn:
            row = conn.execute(
                query("set_quota"),
                {
                    "name": name,
                    "set_seconds": seconds is not _KEEP,
                    "seconds": None if seconds is _KEEP else seconds,
                    "set_bytes": size_bytes is not _KEEP,
                    "bytes": None if size_bytes is _KEEP else size_bytes,
                },
            ).fetchone()
        if row is not None:
            logger.info("owner {} quota changed", name)
        return row is not None

    def owner_usage(self, owner_id: int) -> DictRow | None:
        """The owner's limits and use: quota_seconds, quota_bytes, audio_seconds, stored_bytes."""
        with self.db.connection() as conn:
            return conn.execute(query("owner_usage"), {"owner_id": owner_id, "always": True}).fetchone()

    def check_quota(self, owner_id: int, adding_seconds: float | None, adding_bytes: int) -> None:
        """The module's `check_quota` on this store's database."""
        check_quota(self.db, owner_id, adding_seconds, adding_bytes)

    def stored_bytes(self) -> DictRow:
        """Audio bytes stored in all, and of them the originals (for the metrics)."""
        with self.db.connection() as conn:
            return only_row(conn.execute(query("stored_bytes")))

    def expire_audio(
        self, retention_seconds: float, *, budget_seconds: float | None = None, batch: int | None = None
    ) -> ExpiryPass:
        """Let go of the original audio of done records created more than `retention_seconds`
        ago: batches of `batch` records, each one short fenced statement that journals
        `audio_expired`, then their blobs deleted in bounded batches. Stops when no due record
        is left, or at the first batch boundary past `budget_seconds`."""
        deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
        batch = batch or EXPIRY_BATCH
        expired = 0
        while True:
            with self.db.connection() as conn:
                found = only_row(
                    conn.execute(
                        query("expire_audio"),
                        {
                            "retention_seconds": retention_seconds,
                            "retention_days": retention_seconds / 86400,
                            "batch": batch,
                        },
                    )
                )
            for record_id in found["records"]:
                record_log(record_id, "done", "audio_expired").info(
                    "record {}: original audio expired (retention)", record_id
                )
            self._drop_expired(found["blobs"], found["sizes"])
            expired += len(found["records"])
            if found["looked_at"] < batch:
                return ExpiryPass(expired, False)
            if deadline is not None and time.monotonic() >= deadline:
                return ExpiryPass(expired, True)

    def _drop_expired(self, blob_ids: list[int], sizes: list[int]) -> None:
        """Delete expired originals: small ones together, up to a batch of chunks per transaction
        (one commit for many: a commit each is what deleting them one by one costs most), a
        larger one on its own in bounded batches. What fails is left to the orphan sweep."""
        group: list[int] = []
        room = DELETE_BATCH_CHUNKS
        for blob_id, size in zip(blob_ids, sizes, strict=True):
            chunks = max(1, -(-(size or 0) // CHUNK_BYTES))
            if chunks > DELETE_BATCH_CHUNKS:
                discard_blob(self.db, blob_id)
                continue
            if chunks > room:
                self._drop_group(group)
                group, room = [], DELETE_BATCH_CHUNKS
            group.append(blob_id)
            room -= chunks
        self._drop_group(group)

    def _drop_group(self, blob_ids: list[int]) -> None:
        if not blob_ids:
            return
        try:
            with self.db.transaction() as conn:
                conn.execute(query("drop_expired_blobs"), {"blob_ids": blob_ids})
        except Exception as error:  # noqa: BLE001 - the sweep takes them later
            logger.warning("{} expired audio blob(s) left to the sweep: {}", len(blob_ids), type(error).__name__)
