"""The thin connector between the pipeline's rules and its SQL.

Each method runs named statements from `queries/`; none builds SQL from user input. Every write
a claim holder makes is conditional on the record id and the claim's token and reports whether
it took effect; a refused write is journaled as `save_refused`. Each state change journals its
event in the same statement and logs a line carrying the record id.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Iterable, Iterator

import psycopg
from loguru import logger
from psycopg import sql
from psycopg.types.json import Jsonb

from db.database import Database
from db.queries import query, template
from db.web import WebStore
from domain.claims import NO_WORK, CheckpointRefused, Claim, HaltReason, NoWork
from domain.policy import StepPolicy
from domain.resume import NOW
from domain.stages import Step

CHUNK_BYTES = 1 << 20

# The pipeline never writes these: the owner's fields, and the queue columns whose changes are
# the store's own statements.
NOT_STEP_FIELDS = frozenset({
    "id", "owner_id", "title", "summary", "topics", "stage", "stage_entered_at",
    "claim_token", "lease_expires_at", "failures", "retry_after", "halted_at", "halt_reason",
    "halt_error", "original_blob_id", "created_at", "updated_at",
    # written by checkpoints, the recognize step's own fenced statement
    "segments", "recognized_seconds",
})


class DuplicateOwner(ValueError):
    pass


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _record_log(record_id: int, stage: str, event: str):
    return logger.bind(record_id=record_id, stage=stage, event=event)


class Store(WebStore):
    def __init__(self, db: Database):
        self.db = db

    # --- the claim and the holder's writes -------------------------------------------------

    def claim(self, step: Step, policy: StepPolicy) -> Claim | NoWork:
        """Claim the oldest eligible record of the step's stage, or report no work (P1, P2).

        A record found past its stage's time limit, or whose leases ran out too often (its
        worker died or hung each time: issue 8 §2), is halted here, by its claimer (P4, P5), and
        the search goes on.
        """
        params = {
            "stage": step.source.value,
            "lease_seconds": policy.lease_seconds,
            "time_limit_seconds": policy.time_limit_seconds,
        }
        while True:
            with self.db.transaction() as conn:
                row = conn.execute(query("claim"), params).fetchone()
                if row is None:
                    return NO_WORK
                claim = Claim(row["id"], row["claim_token"], step)
                halt = _claim_halt(row, step, policy)
                if halt is not None:
                    self._halt(conn, claim, *halt, 0)
            if halt is None:
                log = _record_log(claim.record_id, step.source, "claimed")
                log.info("record {} claimed for {} (lease {:g}s)", claim.record_id, step, policy.lease_seconds)
                if row["lost_leases"]:
                    log.warning("record {}: {} earlier claim(s) for {} ran out of lease with nothing written "
                                "(worker lost); it is halted at {}", claim.record_id, row["lost_leases"], step,
                                policy.max_lost_leases)
                return claim
            self._log_halt(claim, step.source, *halt)

    def read_record(self, record_id: int) -> dict | None:
        with self.db.transaction() as conn:
            return conn.execute(query("read_record"), {"id": record_id}).fetchone()

    def save_result(self, claim: Claim, fields: dict[str, object]) -> bool:
        """Advance the record with the fields its step owns, only while the claim is its own (P3)."""
        forbidden = sorted(set(fields) & NOT_STEP_FIELDS)
        if forbidden or not fields:
            raise ValueError(f"a step may not save {forbidden or 'nothing'}")
        owned = sql.SQL(", ").join(
            sql.SQL("{} = {}").format(sql.Identifier(name), sql.Placeholder(f"f_{name}"))
            for name in sorted(fields)
        )
        statement = sql.SQL(template("save_result")).format(owned=owned)
        params = {f"f_{name}": _adapt(value) for name, value in fields.items()}
        params.update(id=claim.record_id, token=claim.token, target=claim.step.target.value)
        with self.db.transaction() as conn:
            saved = conn.execute(statement, params).fetchone() is not None
            if not saved:
                self._refuse(conn, claim, "save")
        if saved:
            _record_log(claim.record_id, claim.step.target, "advanced").info(
                "record {} reached {}", claim.record_id, claim.step.target
            )
        return saved

    def record_failure(self, claim: Claim, error: str, pause_seconds: float) -> bool:
        """Count a failed run and set its retry pause, under the claim's token (P4)."""
        with self.db.transaction() as conn:
            row = conn.execute(
                query("record_failure"),
                {"id": claim.record_id, "token": claim.token, "error": error, "pause_seconds": pause_seconds},
            ).fetchone()
            if row is None:
                self._refuse(conn, claim, "failure")
        if row is not None:
            _record_log(claim.record_id, claim.step.source, "failed").warning(
                "record {} failed {} (attempt {}), retry in {:g}s: {}",
                claim.record_id, claim.step, row["failures"], pause_seconds, error,
            )
        return row is not None

    def halt(self, claim: Claim, reason: HaltReason, error: str, *, count_failure: bool = False) -> bool:
        """Set the halt flag under the claim's token; the reached stage is kept (P5)."""
        with self.db.transaction() as conn:
            halted = self._halt(conn, claim, reason, error, 1 if count_failure else 0)
            if not halted:
                self._refuse(conn, claim, "halt")
        if halted:
            self._log_halt(claim, claim.step.source, reason, error)
        return halted

    def renew_lease(self, claim: Claim, lease_seconds: float, progress_seconds: float | None = None) -> bool:
        """Extend the lease of a running step; False once the claim is no longer its own."""
        with self.db.transaction() as conn:
            row = conn.execute(
                query("renew_lease"),
                {"id": claim.record_id, "token": claim.token, "lease_seconds": lease_seconds,
                 "progress_seconds": progress_seconds},
            ).fetchone()
            if row is None:
                self._refuse(conn, claim, "renew_lease")
        return row is not None

    def checkpoint(self, claim: Claim, from_seconds: float, to_seconds: float, segments: list[dict],
                   language: str | None, lease_seconds: float) -> bool:
        """Save one recognised window's segments and move the checkpoint from `from_seconds` to
        `to_seconds`, only while the claim is its own (P3); False when the claim moved on.

        Raises CheckpointRefused when the claim is still its own but the window does not start
        at the record's last checkpoint: that run is a failed attempt, not a lost claim."""
        with self.db.transaction() as conn:
            row = conn.execute(
                query("checkpoint"),
                {"id": claim.record_id, "token": claim.token, "from_seconds": from_seconds,
                 "to_seconds": to_seconds, "segments": Jsonb(segments), "language": language,
                 "lease_seconds": lease_seconds},
            ).fetchone()
            if row is None:
                why = conn.execute(query("checkpoint_refusal"), {"id": claim.record_id, "token": claim.token}).fetchone()
                if why is not None and why["still_held"]:
                    raise CheckpointRefused(
                        f"checkpoint {from_seconds:g}-{to_seconds:g}s refused: the last checkpoint of record "
                        f"{claim.record_id} is at {why['recognized_seconds']:g}s")
                self._refuse(conn, claim, "checkpoint")
        if row is not None:
            _record_log(claim.record_id, claim.step.source, "checkpoint").debug(
                "record {} recognised up to {:.1f}s", claim.record_id, to_seconds
            )
        return row is not None

    def release(self, claim: Claim) -> bool:
        """Give the claim back unfinished, so the record need not wait out the lease."""
        with self.db.transaction() as conn:
            released = conn.execute(query("release"), {"id": claim.record_id, "token": claim.token}).fetchone()
            if released is None:
                self._refuse(conn, claim, "release")
        if released:
            _record_log(claim.record_id, claim.step.source, "released").info(
                "record {} released unfinished by a stopping {} worker", claim.record_id, claim.step
            )
        return released is not None

    def _halt(self, conn: psycopg.Connection, claim: Claim, reason: HaltReason, error: str, add: int) -> bool:
        row = conn.execute(
            query("halt"),
            {"id": claim.record_id, "token": claim.token, "reason": reason.value, "error": error,
             "add_failures": add},
        ).fetchone()
        return row is not None

    def _refuse(self, conn: psycopg.Connection, claim: Claim, write: str) -> None:
        conn.execute(query("journal_refusal"), {"id": claim.record_id, "token": claim.token, "write": write})
        _record_log(claim.record_id, claim.step.source, "save_refused").warning(
            "record {}: {} of a stale {} claim refused (the claim moved on)", claim.record_id, write, claim.step
        )

    @staticmethod
    def _log_halt(claim: Claim, stage: str, reason: HaltReason, error: str) -> None:
        _record_log(claim.record_id, stage, "halted").bind(reason=reason.value).error(
            "record {} halted at stage {}: {} ({})", claim.record_id, stage, reason, error
        )

    # --- resume (the domain names the guards; this is the one statement that resets them) ----

    def resume(self, record_id: int, resets: dict[str, object], by: str = "operator") -> str | None:
        assignments = sql.SQL(", ").join(
            sql.SQL("{} = now()").format(sql.Identifier(column))
            if value is NOW
            else sql.SQL("{} = {}").format(sql.Identifier(column), sql.Placeholder(f"r_{column}"))
            for column, value in resets.items()
        )
        params = {f"r_{c}": v for c, v in resets.items() if v is not NOW}
        params.update(id=record_id, by=by)
        with self.db.transaction() as conn:
            row = conn.execute(sql.SQL(template("resume")).format(resets=assignments), params).fetchone()
        if row is None:
            return None
        _record_log(record_id, row["stage"], "resumed").info(
            "record {} resumed by a human at stage {}", record_id, row["stage"]
        )
        return row["stage"]

    def stage_of(self, record_id: int) -> str | None:
        with self.db.transaction() as conn:
            row = conn.execute(query("stage_of"), {"id": record_id}).fetchone()
        return row["stage"] if row else None

    # --- owners -------------------------------------------------------------------------------

    def add_owner(self, name: str) -> str:
        """Create an owner and return its API token; only its hash is stored."""
        token = secrets.token_urlsafe(32)
        try:
            with self.db.transaction() as conn:
                conn.execute(query("create_owner"), {"name": name, "token_hash": hash_token(token)})
        except psycopg.errors.UniqueViolation as error:
            raise DuplicateOwner(f"an owner named {name!r} already exists") from error
        logger.info("owner {} added", name)
        return token

    def owner_by_name(self, name: str) -> dict | None:
        with self.db.transaction() as conn:
            return conn.execute(query("owner_by_name"), {"name": name}).fetchone()

    def owner_by_token(self, token: str) -> dict | None:
        """The owner whose API token this is. The lookup goes by the token's hash, so the index
        compares hashes, not the secret; the final check is a constant-time comparison."""
        digest = hash_token(token)
        with self.db.transaction() as conn:
            row = conn.execute(query("owner_by_token_hash"), {"token_hash": digest}).fetchone()
        if row is None or not hmac.compare_digest(row["token_hash"], digest):
            return None
        return {"id": row["id"], "name": row["name"], "disabled": row["disabled_at"] is not None}

    def new_token(self, name: str) -> str | None:
        """Give the owner called `name` a new API token and return it (None: no such owner).
        The old token is refused from this moment on: no process keeps a copy of it."""
        token = secrets.token_urlsafe(32)
        with self.db.transaction() as conn:
            row = conn.execute(query("replace_owner_token"), {"name": name, "token_hash": hash_token(token)}).fetchone()
        if row is None:
            return None
        logger.info("owner {} has a new API token; the old one is refused", name)
        return token

    def set_owner_disabled(self, name: str, disabled: bool) -> bool | None:
        """Disable or enable the owner called `name`; return whether it was disabled before
        (None: no such owner). A disabled owner's token is refused; its records stay."""
        with self.db.transaction() as conn:
            row = conn.execute(query("set_owner_disabled"), {"name": name, "disabled": disabled}).fetchone()
        if row is None:
            return None
        logger.info("owner {} {}", name, "disabled" if disabled else "enabled")
        return row["was_disabled"]

    def owners(self) -> list[dict]:
        """Every owner with its state and record counts (never a token)."""
        with self.db.transaction() as conn:
            return conn.execute(query("list_owners")).fetchall()

    # --- audio blobs and intake ---------------------------------------------------------------

    def write_blob(self, conn: psycopg.Connection, pieces: Iterable[bytes], media_type: str) -> tuple[int, int]:
        """Store a byte stream as a blob in chunks, inside the caller's transaction."""
        blob_id = conn.execute(query("create_blob"), {"media_type": media_type}).fetchone()["id"]
        seq = 0
        for chunk in _rechunk(pieces, CHUNK_BYTES):
            conn.execute(query("append_chunk"), {"blob_id": blob_id, "seq": seq, "data": chunk})
            seq += 1
        size = conn.execute(query("finish_blob"), {"blob_id": blob_id}).fetchone()["size_bytes"]
        return blob_id, size

    def store_blob(self, pieces: Iterable[bytes], media_type: str) -> tuple[int, int]:
        with self.db.transaction() as conn:
            return self.write_blob(conn, pieces, media_type)

    def read_blob(self, blob_id: int, batch: int = 4, *, start_byte: int = 0) -> Iterator[bytes]:
        """The blob's bytes from `start_byte` on, chunk by chunk; a few chunks are fetched per
        round trip. Chunks before the start are not read at all."""
        seq, skip = divmod(start_byte, CHUNK_BYTES)
        while True:
            with self.db.transaction() as conn:
                rows = conn.execute(query("read_chunks"), {"blob_id": blob_id, "from_seq": seq, "limit": batch}).fetchall()
            for row in rows:
                data = bytes(row["data"])
                if skip:
                    data, skip = data[skip:], 0
                if data:
                    yield data
            if len(rows) < batch:
                return
            seq = rows[-1]["seq"] + 1

    def delete_blob(self, blob_id: int) -> None:
        with self.db.transaction() as conn:
            conn.execute(query("delete_blob"), {"blob_id": blob_id})

    def delete_orphan_blobs(self, older_than_seconds: float) -> int:
        with self.db.transaction() as conn:
            return len(conn.execute(query("delete_orphan_blobs"), {"older_than_seconds": older_than_seconds}).fetchall())

    def accept(self, owner_id: int, pieces: Iterable[bytes], *, title: str = "", source_name: str = "",
               media_type: str = "application/octet-stream", language: str | None = None) -> int:
        """Store the original audio and create its record at stage created, in one transaction."""
        with self.db.transaction() as conn:
            blob_id, size = self.write_blob(conn, pieces, media_type)
            if size == 0:
                raise ValueError("the file is empty")
            record_id = conn.execute(
                query("accept_record"),
                {"owner_id": owner_id, "title": title, "source_name": source_name, "blob_id": blob_id,
                 "size_bytes": size, "language": language},
            ).fetchone()["id"]
        _record_log(record_id, "created", "accepted").info("record {} accepted ({} bytes)", record_id, size)
        return record_id

    # --- the owner's and the operator's reads -------------------------------------------------

    def card_row(self, record_id: int, owner_id: int | None = None) -> dict | None:
        with self.db.transaction() as conn:
            return conn.execute(query("card"), {"id": record_id, "owner_id": owner_id}).fetchone()

    def list_card_rows(self, owner_id: int, limit: int, offset: int) -> tuple[list[dict], int]:
        with self.db.transaction() as conn:
            rows = conn.execute(query("list_cards"), {"owner_id": owner_id, "limit": limit, "offset": offset}).fetchall()
            total = conn.execute(query("count_records"), {"owner_id": owner_id}).fetchone()["total"]
        return rows, total

    def edit(self, record_id: int, owner_id: int, *, title: str | None = None, summary: str | None = None,
             topics: list[str] | None = None) -> bool:
        with self.db.transaction() as conn:
            row = conn.execute(
                query("edit_record"),
                {"id": record_id, "owner_id": owner_id, "title": title, "summary": summary, "topics": topics},
            ).fetchone()
        return row is not None

    def transcript(self, record_id: int, owner_id: int | None = None) -> dict | None:
        with self.db.transaction() as conn:
            return conn.execute(query("transcript"), {"id": record_id, "owner_id": owner_id}).fetchone()

    def events(self, record_id: int) -> list[dict]:
        with self.db.transaction() as conn:
            return conn.execute(query("events"), {"id": record_id}).fetchall()

    def status(self) -> list[dict]:
        with self.db.transaction() as conn:
            return conn.execute(query("status")).fetchall()


def _claim_halt(row: dict, step: Step, policy: StepPolicy) -> tuple[HaltReason, str] | None:
    """Why a record just claimed must be halted by its claimer instead of worked, if it must."""
    if row["overdue"]:
        return HaltReason.STAGE_TIME_LIMIT, f"stayed in stage {step.source} longer than {policy.time_limit_seconds:g}s"
    if policy.worker_lost(row["lost_leases"]):
        return HaltReason.WORKER_LOST, (
            f"{row['lost_leases']} claims for {step} ran out of lease with nothing written: its worker died or "
            f"hung each time (TRANSCRIBER_MAX_LOST_LEASES={policy.max_lost_leases})")
    return None


def _adapt(value: object) -> object:
    return Jsonb(value) if isinstance(value, (dict, list)) else value


def _rechunk(pieces: Iterable[bytes], size: int) -> Iterator[bytes]:
    buffer = bytearray()
    for piece in pieces:
        buffer += piece
        while len(buffer) >= size:
            yield bytes(buffer[:size])
            del buffer[:size]
    if buffer:
        yield bytes(buffer)
