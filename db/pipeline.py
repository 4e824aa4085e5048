"""The pipeline's side of the store: the claim, the writes of a claim's holder, and resume.

Every write a holder makes is conditional on the record id and the claim's token and reports
whether it took effect; a refused write is journaled as `save_refused`. Each state change
journals its event in the same statement (`queries/pipeline.sql`) and logs a line carrying the
record id.
"""
from __future__ import annotations

import functools

import psycopg
from loguru import logger
from psycopg.types.json import Jsonb

from db.blobs import discard_blob
from db.database import Database
from db.queries import assignments, compose, query, text
from domain import holders
from domain.claims import NO_WORK, CheckpointRefused, Claim, HaltReason, NoWork
from domain.policy import StepPolicy
from domain.resume import NOW
from domain.stages import Stage, Step

# The pipeline never writes these: the owner's fields, and the queue columns whose changes are
# the pipeline's own statements.
NOT_STEP_FIELDS = frozenset({
    "id", "owner_id", "title", "summary", "topics", "prompt", "stage", "stage_entered_at",
    "claim_token", "lease_expires_at", "claim_holder", "failures", "retry_after", "halted_at", "halt_reason",
    "halt_error", "original_blob_id", "created_at", "updated_at",
    # assembled from the record's windows by the save that reaches done
    "transcript",
    # written by checkpoints, the recognize step's own fenced statement
    "segments", "recognized_seconds", "language_probability",
})


def record_log(record_id: int, stage: str, event: str):
    """The logger for a line about one record: it carries the record's id, stage and event."""
    return logger.bind(record_id=record_id, stage=stage, event=event)


class Pipeline:
    """The claim and the holder's writes; a part of `db.store.Store`."""

    db: Database

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
            "holder": holders.this_process(),
        }
        while True:
            row = self.db.one(text("claim"), params, positional=True)
            if row is None:
                return NO_WORK
            record_id, token, overdue, lost_leases = row  # the statement's columns, in its order
            claim = Claim(record_id, token, step)
            halt_cause = _halt_on_claim(overdue, lost_leases, step, policy)
            if halt_cause is not None:
                with self.db.connection() as conn:
                    self._halt(conn, claim, *halt_cause, add_failures=0)
            if halt_cause is None:
                # the journal has every claim; the log shows them at DEBUG (nothing to format else).
                # The record's context goes as keyword arguments, not a `bind`: loguru drops a line
                # below its level before reading them, where a bind builds a logger every claim.
                logger.debug("record {} claimed for {} (lease {:g}s)", claim.record_id, step, policy.lease_seconds,
                             record_id=claim.record_id, stage=step.source, event="claimed")
                if lost_leases:
                    record_log(claim.record_id, step.source, "claimed").warning(
                        "record {}: {} earlier claim(s) for {} ran out of lease with nothing written (worker "
                        "lost); it is halted at {}", claim.record_id, lost_leases, step, policy.max_lost_leases)
                return claim
            self._log_halt(claim, step.source, *halt_cause)

    def read_record(self, record_id: int) -> dict | None:
        """The step's ordinary read of the record's columns, whatever columns there are (INV-2)."""
        return self.db.one(text("read_record"), {"id": record_id})

    def save_result(self, claim: Claim, fields: dict[str, object], *, diarize: bool = False) -> bool:
        """Advance the record with the fields its step owns, only while the claim is its own (P3).

        The save that reaches done also assembles the text from the record's windows and lets its
        converted audio go, in the same statement; that audio is deleted right after. With
        `diarize` it queues the record for the diarize step too, unless its upload said off."""
        target = claim.step.target
        done = target is Stage.DONE
        statement = _save_statement(tuple(fields), done)
        params = {f"f_{name}": _as_parameter(value) for name, value in fields.items()}
        params.update(id=claim.record_id, token=claim.token, target=target.value, diarize=diarize)
        row = self.db.one(statement, params, positional=True)  # (id) or, reaching done, (id, released_blob_id)
        if row is None:
            with self.db.connection() as conn:
                self._refuse(conn, claim, "save")
            return False
        if done and row[1] is not None:
            discard_blob(self.db, row[1])
        # a record done is news for the log; the stages on the way are in the journal (the
        # record's context as keyword arguments, as in `claim`)
        (logger.info if done else logger.debug)("record {} reached {}", claim.record_id, target,
                                                record_id=claim.record_id, stage=target, event="advanced")
        return True

    def record_failure(self, claim: Claim, error: str, pause_seconds: float) -> bool:
        """Count a failed run and set its retry pause, under the claim's token (P4)."""
        with self.db.connection() as conn:
            row = conn.execute(
                query("record_failure"),
                {"id": claim.record_id, "token": claim.token, "error": error, "pause_seconds": pause_seconds},
            ).fetchone()
            if row is None:
                self._refuse(conn, claim, "failure")
        if row is not None:
            record_log(claim.record_id, claim.step.source, "failed").warning(
                "record {} failed {} (attempt {}), retry in {:g}s: {}",
                claim.record_id, claim.step, row["failures"], pause_seconds, error,
            )
        return row is not None

    def halt(self, claim: Claim, reason: HaltReason, error: str, *, count_failure: bool = False) -> bool:
        """Set the halt flag under the claim's token; the reached stage is kept (P5)."""
        with self.db.connection() as conn:
            halted = self._halt(conn, claim, reason, error, add_failures=1 if count_failure else 0)
            if not halted:
                self._refuse(conn, claim, "halt")
        if halted:
            self._log_halt(claim, claim.step.source, reason, error)
        return halted

    def renew_lease(self, claim: Claim, lease_seconds: float, progress_seconds: float | None = None) -> bool:
        """Extend the lease of a running step; False once the claim is no longer its own."""
        with self.db.connection() as conn:
            row = conn.execute(
                text("renew_lease"),
                {"id": claim.record_id, "token": claim.token, "lease_seconds": lease_seconds,
                 "progress_seconds": progress_seconds},
            ).fetchone()
            if row is None:
                self._refuse(conn, claim, "renew_lease")
        return row is not None

    def checkpoint(self, claim: Claim, from_seconds: float, to_seconds: float, segments: list[dict],
                   language: str | None, lease_seconds: float, language_probability: float | None = None,
                   suppressed: list[dict] | None = None) -> bool:
        """Save one recognised window's segments (and the spans its guards suppressed) and move the
        checkpoint from `from_seconds` to `to_seconds`, only while the claim is its own (P3);
        False when the claim moved on.

        Raises CheckpointRefused when the claim is still its own but the window does not start
        at the record's last checkpoint: that run is a failed attempt, not a lost claim."""
        with self.db.connection() as conn:
            row = conn.execute(
                text("checkpoint"),
                {"id": claim.record_id, "token": claim.token, "from_seconds": from_seconds,
                 "to_seconds": to_seconds, "segments": Jsonb(segments), "language": language,
                 "language_probability": language_probability,
                 "suppressed": Jsonb(suppressed or []),
                 "lease_seconds": lease_seconds},
            ).fetchone()
            if row is None:
                refusal = conn.execute(query("checkpoint_refusal"),
                                       {"id": claim.record_id, "token": claim.token}).fetchone()
                if refusal is not None and refusal["still_held"]:
                    raise CheckpointRefused(
                        f"checkpoint {from_seconds:g}-{to_seconds:g}s refused: the last checkpoint of record "
                        f"{claim.record_id} is at {refusal['recognized_seconds']:g}s")
                self._refuse(conn, claim, "checkpoint")
        if row is not None:
            record_log(claim.record_id, claim.step.source, "checkpoint").debug(
                "record {} recognised up to {:.1f}s", claim.record_id, to_seconds
            )
        return row is not None

    def release(self, claim: Claim) -> bool:
        """Give the claim back unfinished, so the record need not wait out the lease."""
        with self.db.connection() as conn:
            released = conn.execute(query("release"), {"id": claim.record_id, "token": claim.token}).fetchone()
            if released is None:
                self._refuse(conn, claim, "release")
        if released is not None:
            record_log(claim.record_id, claim.step.source, "released").info(
                "record {} released unfinished by a stopping {} worker", claim.record_id, claim.step
            )
        return released is not None

    def claims_held_on_machine(self, machine: str) -> list[dict]:
        """The standing claims whose holders' names begin with `machine` (domain.holders):
        id, claim_token, claim_holder."""
        with self.db.connection() as conn:
            return conn.execute(query("claims_held_on_machine"), {"machine": machine}).fetchall()

    def end_gone_holders_lease(self, record_id: int, token: int, holder: str) -> bool:
        """End the lease of the claim `token` on the record, whose holder `holder` is known to
        have ended, so that a claim takes the record up now; False when that claim no longer
        stands."""
        with self.db.connection() as conn:
            ended = conn.execute(query("end_gone_holders_lease"),
                                 {"id": record_id, "token": token, "holder": holder}).fetchone()
        if ended is not None:
            record_log(record_id, ended["stage"], "holder_gone").info(
                "record {}: the process that held claim {} has ended; its lease ends now", record_id, token)
        return ended is not None

    def resume(self, record_id: int, resets: dict[str, object], by: str = "operator") -> str | None:
        """Clear the halt flag and reset every guard the domain names in `resets` (a value of
        NOW: the moment of the resume), journaled as done by `by`, in one statement. The
        record's stage, or None when it was not halted (P5)."""
        statement = compose("resume", resets=assignments(
            resets, "r_", set_to_now={column for column, value in resets.items() if value is NOW}))
        params = {f"r_{column}": value for column, value in resets.items() if value is not NOW}
        params.update(id=record_id, by=by)
        with self.db.connection() as conn:
            row = conn.execute(statement, params).fetchone()
        if row is None:
            return None
        record_log(record_id, row["stage"], "resumed").info(
            "record {} resumed by a human at stage {}", record_id, row["stage"]
        )
        return row["stage"]

    def stage_of(self, record_id: int) -> str | None:
        with self.db.connection() as conn:
            row = conn.execute(query("stage_of"), {"id": record_id}).fetchone()
        return row["stage"] if row else None

    def _halt(self, conn: psycopg.Connection, claim: Claim, reason: HaltReason, error: str, *,
              add_failures: int) -> bool:
        row = conn.execute(
            query("halt"),
            {"id": claim.record_id, "token": claim.token, "reason": reason.value, "error": error,
             "add_failures": add_failures},
        ).fetchone()
        return row is not None

    def _refuse(self, conn: psycopg.Connection, claim: Claim, write: str) -> None:
        conn.execute(query("journal_refusal"), {"id": claim.record_id, "token": claim.token, "write": write})
        record_log(claim.record_id, claim.step.source, "save_refused").warning(
            "record {}: {} of a stale {} claim refused (the claim moved on)", claim.record_id, write, claim.step
        )

    @staticmethod
    def _log_halt(claim: Claim, stage: str, reason: HaltReason, error: str) -> None:
        record_log(claim.record_id, stage, "halted").bind(reason=reason.value).error(
            "record {} halted at stage {}: {} ({})", claim.record_id, stage, reason, error
        )


@functools.lru_cache(maxsize=32)
def _save_statement(columns: tuple[str, ...], done: bool = False) -> bytes:
    """save_result (save_done for the save that reaches done) for the owned columns a step saves,
    checked and composed once (a step always saves the same ones), as bytes like `text`'s
    statements. Raises ValueError for columns a step may not save (never cached: raised anew)."""
    forbidden = sorted(set(columns) & NOT_STEP_FIELDS)
    if forbidden or not columns:
        raise ValueError(f"a step may not save {forbidden or 'nothing'}")
    statement = compose("save_done" if done else "save_result", owned=assignments(sorted(columns), "f_"))
    return statement.as_string().encode("ascii")


def _halt_on_claim(overdue: bool, lost_leases: int, step: Step, policy: StepPolicy) -> tuple[HaltReason, str] | None:
    """Why a record just claimed must be halted by its claimer instead of worked, if it must:
    it stayed in its stage past the time limit (`overdue`), or too many of its leases were lost."""
    if overdue:
        return HaltReason.STAGE_TIME_LIMIT, f"stayed in stage {step.source} longer than {policy.time_limit_seconds:g}s"
    if policy.worker_lost(lost_leases):
        return HaltReason.WORKER_LOST, (
            f"{lost_leases} claims for {step} ran out of lease with nothing written: its worker died or "
            f"hung each time (TRANSCRIBER_MAX_LOST_LEASES={policy.max_lost_leases})")
    return None


def _as_parameter(value: object) -> object:
    """A step's field as a statement parameter: structured values travel as JSON."""
    return Jsonb(value) if isinstance(value, (dict, list)) else value
