"""The diarize step's side of the store: its side queue (record_speakers, migration 38) claimed,
fenced and halted like the stages, and the owner's names for the speakers.

The claims here carry Step.DIARIZE; every write of a holder is conditional on the record id and
the claim's token, and a refused one is journaled as `save_refused` (detail.step: diarize).
"""
from __future__ import annotations

from typing import Sequence

import psycopg
from psycopg.types.json import Jsonb

from db.database import Database
from db.pipeline import _halt_on_claim, record_log
from db.queries import query
from domain import holders
from domain.claims import NO_WORK, Claim, HaltReason, NoWork
from domain.policy import StepPolicy
from domain.stages import Step


class Speakers:
    """The diarize step's claim and writes; a part of `db.store.Store`."""

    db: Database

    def claim_speakers(self, policy: StepPolicy) -> Claim | NoWork:
        """Claim the oldest claimable side row; a row past its time limit or whose leases ran
        out too often is halted by its claimer (the record stays done) and the search goes on."""
        params = {"lease_seconds": policy.lease_seconds, "time_limit_seconds": policy.time_limit_seconds,
                  "holder": holders.this_process()}
        while True:
            with self.db.connection() as conn:
                row = conn.execute(query("claim_speakers"), params).fetchone()
                if row is None:
                    return NO_WORK
                claim = Claim(row["id"], row["claim_token"], Step.DIARIZE)
                cause = _halt_on_claim(row["overdue"], row["lost_leases"], Step.DIARIZE, policy)
                if cause is not None:
                    self._speakers_halt(conn, claim, *cause, add_failures=0)
            if cause is None:
                return claim
            _log(claim, "halted").error("record {}: speakers halted: {} ({})", claim.record_id, *cause)

    def end_gone_speakers_lease(self, record_id: int, token: int, holder: str) -> bool:
        """End the lease of the speakers claim `token`, whose holder `holder` is known to have
        ended (as `end_gone_holders_lease` for a record); False when that claim no longer stands."""
        with self.db.connection() as conn:
            ended = conn.execute(query("end_gone_speakers_lease"),
                                 {"id": record_id, "token": token, "holder": holder}).fetchone()
        if ended is not None:
            _log(Claim(record_id, token, Step.DIARIZE), "holder_gone").info(
                "record {}: the process that held speakers claim {} has ended; its lease ends now", record_id, token)
        return ended is not None

    def speakers_job(self, record_id: int) -> dict | None:
        with self.db.connection() as conn:
            return conn.execute(query("speakers_job"), {"id": record_id}).fetchone()

    def save_speakers(self, claim: Claim, turns: list[dict], said: Sequence[Sequence[str]] = ()) -> bool:
        """Save the speaker turns, only while the claim is its own; `said` holds each segment's
        speaker labels in the text's order, kept on its search row (search by speaker)."""
        return self._write(claim, "save", "save_speakers", turns=Jsonb(turns), said=Jsonb([list(x) for x in said]))

    def speakers_checkpoint(self, claim: Claim, from_seconds: float, to_seconds: float, times: bytes,
                            vectors: bytes, lease_seconds: float) -> bool:
        """Save one window's embeddings and move the checkpoint on, only while the claim is its
        own and the window starts at the last checkpoint; False otherwise (journaled)."""
        return self._write(claim, "checkpoint", "speakers_checkpoint", from_seconds=from_seconds,
                           to_seconds=to_seconds, times=times, vectors=vectors, lease_seconds=lease_seconds)

    def speaker_windows(self, record_id: int, up_to: float) -> list[dict]:
        """The embeddings checkpointed up to `up_to` seconds, in recording order."""
        with self.db.connection() as conn:
            return conn.execute(query("speaker_windows"), {"id": record_id, "up_to": up_to}).fetchall()

    def speakers_failure(self, claim: Claim, error: str, pause_seconds: float) -> bool:
        saved = self._write(claim, "failure", "speakers_failure", error=error, pause_seconds=pause_seconds)
        if saved:
            _log(claim, "failed").warning("record {}: diarize failed, retry in {:g}s: {}",
                                          claim.record_id, pause_seconds, error)
        return saved

    def speakers_halt(self, claim: Claim, reason: HaltReason, error: str, *, count_failure: bool = False) -> bool:
        """Halt the side row only: the record stays done and readable."""
        with self.db.connection() as conn:
            halted = self._speakers_halt(conn, claim, reason, error, add_failures=int(count_failure))
            if not halted:
                self._speakers_refuse(conn, claim, "halt")
        if halted:
            _log(claim, "halted").error("record {}: speakers halted: {} ({})", claim.record_id, reason, error)
        return halted

    def renew_speakers_lease(self, claim: Claim, lease_seconds: float, progress_seconds: float | None = None) -> bool:
        return self._write(claim, "renew_lease", "renew_speakers_lease", lease_seconds=lease_seconds,
                           progress_seconds=progress_seconds)

    def release_speakers(self, claim: Claim) -> bool:
        return self._write(claim, "release", "release_speakers")

    def resume_speakers(self, record_id: int, by: str = "operator") -> bool:
        """A human returns the record's halted speakers row to work; False if none is halted."""
        with self.db.connection() as conn:
            row = conn.execute(query("resume_speakers"), {"id": record_id, "by": by}).fetchone()
        if row is not None:
            record_log(record_id, "done", "resumed").bind(step="diarize").info(
                "record {}: speakers resumed by a human", record_id)
        return row is not None

    def name_speakers(self, record_id: int, owner_id: int, names: dict[str, str | None]) -> bool:
        """The owner's names for speaker labels, merged into the earlier ones ("" or None takes a
        name away); False when the owner has no such record."""
        names = {label: (name or None) for label, name in names.items()}
        with self.db.transaction() as conn:
            row = conn.execute(query("name_speakers"),
                               {"id": record_id, "owner_id": owner_id, "names": Jsonb(names)}).fetchone()
        return row is not None

    def _write(self, claim: Claim, write: str, statement: str, **params: object) -> bool:
        with self.db.connection() as conn:
            row = conn.execute(query(statement), {"id": claim.record_id, "token": claim.token, **params}).fetchone()
            if row is None:
                self._speakers_refuse(conn, claim, write)
        return row is not None

    @staticmethod
    def _speakers_halt(conn: psycopg.Connection, claim: Claim, reason: HaltReason, error: str, *,
                       add_failures: int) -> bool:
        return conn.execute(query("speakers_halt"), {"id": claim.record_id, "token": claim.token,
                                                     "reason": reason.value, "error": error,
                                                     "add_failures": add_failures}).fetchone() is not None

    @staticmethod
    def _speakers_refuse(conn: psycopg.Connection, claim: Claim, write: str) -> None:
        conn.execute(query("journal_speakers_refusal"), {"id": claim.record_id, "token": claim.token, "write": write})
        _log(claim, "save_refused").warning("record {}: {} of a stale diarize claim refused (the claim moved on)",
                                            claim.record_id, write)


def _log(claim: Claim, event: str):
    return record_log(claim.record_id, "done", event).bind(step="diarize")
