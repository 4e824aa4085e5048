"""The claim protocol's side of the store: the claim, the writes of a claim's holder, and resume,
the same for every step.

Every write a holder makes is conditional on the record, the step and the claim's token and
reports whether it took effect; a refused write is journaled as `save_refused` (P3). Each state
change journals its event in the same statement (`queries/pipeline.sql`) and logs a line
carrying the record id. A step adds its own part to two statements only, its save and its
checkpoint (`save_<step>`, `checkpoint_<step>`), composed here once per step.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from loguru import logger
from psycopg import sql
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from db.blobs import discard_blob
from db.database import Database
from db.journal import claim_log, log_claimed, log_halt, record_log, refuse
from db.queries import assignments, compose, query, text
from db.rows import DictConnection
from domain import holders
from domain.claims import NO_WORK, CheckpointRefused, Claim, HaltReason, NoWork
from domain.policy import StepPolicy
from domain.resume import NOW
from domain.stages import Stage, Step

# The columns no step's save writes through its SET list: the record's owner fields, the intake's,
# those its step's statement writes itself, and the step row's.
NOT_STEP_FIELDS = frozenset(
    {
        "id",
        "owner_id",
        "title",
        "summary",
        "topics",
        "prompt",
        "speaker_names",
        "speakers_wanted",
        "stage",
        "stage_entered_at",
        "original_blob_id",
        "source_name",
        "content_sha256",
        "intake_seconds",
        "audio_expired_at",
        "created_at",
        "updated_at",
        # assembled from the record's windows by the save that reaches done
        "transcript",
        # written by the recognize step's checkpoints
        "language_probability",
        # the step row's: the protocol's statements alone write them
        "step",
        "entered_at",
        "turn",
        "claim_token",
        "claim_holder",
        "lease_expires_at",
        "failures",
        "retry_after",
        "lost_leases",
        "halted_at",
        "halt_reason",
        "halt_error",
        "progress_seconds",
        "checkpoint_seconds",
        "checkpoint_token",
        "queued_at",
    }
)

# The journal's word for a save: a step that moves the stage "advanced" the record.
_SAVED_EVENT = {Step.DIARIZE: "speakers_saved"}


class Pipeline:
    """The claim and the holder's writes; a part of `db.store.Store`."""

    db: Database

    def claim(self, step: Step, policy: StepPolicy) -> Claim | NoWork:
        """Claim the oldest eligible record of the step, or report no work (P1, P2).

        A record found past the step's time limit, or whose leases ran out too often (its worker
        died or hung each time), is halted here, by its claimer (P4, P5), and the search goes on.
        """
        params = {
            "step": step.value,
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
            halt_cause = policy.halt_on_claim(step, overdue, lost_leases)
            if halt_cause is None:
                log_claimed(claim, policy, lost_leases)
                return claim
            with self.db.connection() as conn:
                if self._halt(conn, claim, *halt_cause, add_failures=0):
                    log_halt(claim, *halt_cause)

    def read_for_step(self, claim: Claim) -> DictRow | None:
        """The step's ordinary read of the record's columns, whatever columns there are (INV-2),
        with its step row's `failures` and `checkpoint_seconds`; None once the record is gone."""
        return self.db.one(text("read_for_step"), {"id": claim.record_id, "step": claim.step.value})

    def read_record(self, record_id: int) -> DictRow | None:
        """A record's columns with those of the step its stage waits for (claim, guards, halt,
        checkpoint; None once done)."""
        return self.db.one(text("read_record"), {"id": record_id})

    def save(
        self,
        claim: Claim,
        fields: Mapping[str, object],
        params: Mapping[str, object] | None = None,
        *,
        next_step: Step | None,
    ) -> bool:
        """End the step with its result, only while the claim is its own (P3): `fields`, the
        record's columns the step owns, and `params`, what its save statement takes besides;
        `next_step` is queued in the same statement. The save that reaches done lets the
        converted audio go, which is deleted right after."""
        step = claim.step
        values = {f"f_{name}": _as_parameter(value) for name, value in fields.items()}
        values.update({name: _as_parameter(value) for name, value in (params or {}).items()})
        # the saves that write a text take its passages (search by meaning): none given, they stay
        values.setdefault("passages", None)
        values.update(
            id=claim.record_id,
            token=claim.token,
            step=step.value,
            target=step.target.value,
            next_step=next_step and next_step.value,
            saved_event=_SAVED_EVENT.get(step, "advanced"),
        )
        row = self.db.one(_save_statement(step, tuple(sorted(fields))), values, positional=True)
        if row is None:
            with self.db.connection() as conn:
                refuse(conn, claim, "save")
            return False
        _, released_blob_id = row  # the statement's columns, in its order
        if released_blob_id is not None:
            discard_blob(self.db, released_blob_id)
        # a record done, or its speakers found, is news for the log; the stages on the way are in
        # the journal. The context as keyword arguments (see log_claimed).
        event = _SAVED_EVENT.get(step, "advanced")
        (logger.info if step.target is Stage.DONE else logger.debug)(
            "record {}: {} saved, at {}",
            claim.record_id,
            step,
            step.target,
            record_id=claim.record_id,
            stage=step.target,
            event=event,
            step=step.value,
        )
        return True

    def record_failure(self, claim: Claim, error: str, pause_seconds: float) -> bool:
        """Count a failed run and set its retry pause, under the claim's token (P4)."""
        row = self._write(claim, "failure", query("record_failure"), error=error, pause_seconds=pause_seconds)
        if row is not None:
            claim_log(claim, "failed").warning(
                "record {} failed {} (attempt {}), retry in {:g}s: {}",
                claim.record_id,
                claim.step,
                row["failures"],
                pause_seconds,
                error,
            )
        return row is not None

    def halt(self, claim: Claim, reason: HaltReason, error: str, *, count_failure: bool = False) -> bool:
        """Set the halt flag under the claim's token; the reached stage is kept (P5)."""
        with self.db.connection() as conn:
            halted = self._halt(conn, claim, reason, error, add_failures=1 if count_failure else 0)
            if not halted:
                refuse(conn, claim, "halt")
        if halted:
            log_halt(claim, reason, error)
        return halted

    def renew_lease(self, claim: Claim, lease_seconds: float, progress_seconds: float | None = None) -> bool:
        """Extend the lease of a running step; False once the claim is no longer its own."""
        return (
            self._write(
                claim,
                "renew_lease",
                text("renew_lease"),
                lease_seconds=lease_seconds,
                progress_seconds=progress_seconds,
            )
            is not None
        )

    def checkpoint(
        self,
        claim: Claim,
        from_seconds: float,
        to_seconds: float,
        lease_seconds: float,
        kept: Mapping[str, object],
        detail: Mapping[str, object] | None = None,
    ) -> bool:
        """Save one window of the step's work (`kept`: what its checkpoint statement keeps) and move
        the checkpoint from `from_seconds` to `to_seconds`, only while the claim is its own (P3);
        False when the claim moved on. `detail` goes into the journal's line.

        Raises CheckpointRefused when the claim is still its own but the window does not start
        at the step's last checkpoint: that run is a failed attempt, not a lost claim."""
        values = {name: _as_parameter(value) for name, value in kept.items()}
        values.update(
            id=claim.record_id,
            token=claim.token,
            step=claim.step.value,
            from_seconds=from_seconds,
            to_seconds=to_seconds,
            lease_seconds=lease_seconds,
            detail=Jsonb(dict(detail or {})),
        )
        with self.db.connection() as conn:
            row = conn.execute(_checkpoint_statement(claim.step), values).fetchone()
            if row is None:
                refusal = conn.execute(query("checkpoint_refusal"), _claim_params(claim)).fetchone()
                if refusal is not None and refusal["still_held"]:
                    raise CheckpointRefused(
                        f"checkpoint {from_seconds:g}-{to_seconds:g}s refused: the last checkpoint of record "
                        f"{claim.record_id} for {claim.step} is at {refusal['checkpoint_seconds']:g}s"
                    )
                refuse(conn, claim, "checkpoint")
                return False
        claim_log(claim, "checkpoint").debug("record {}: {} up to {:.1f}s", claim.record_id, claim.step, to_seconds)
        return True

    def release(self, claim: Claim) -> bool:
        """Give the claim back unfinished, so the step need not wait out the lease."""
        released = self._write(claim, "release", query("release")) is not None
        if released:
            claim_log(claim, "released").info(
                "record {} released unfinished by a stopping {} worker", claim.record_id, claim.step
            )
        return released

    def claims_held_on_machine(self, machine: str) -> list[DictRow]:
        """The standing claims whose holders' names begin with `machine` (domain.holders):
        record_id, step, claim_token, claim_holder."""
        with self.db.connection() as conn:
            return conn.execute(query("claims_held_on_machine"), {"machine": machine}).fetchall()

    def end_gone_holders_lease(self, claim: Claim, holder: str) -> bool:
        """End the lease of `claim`, whose holder `holder` is known to have ended, so that a
        claim takes the step up now; False when that claim no longer stands."""
        with self.db.connection() as conn:
            ended = conn.execute(query("end_gone_holders_lease"), {**_claim_params(claim), "holder": holder}).fetchone()
        if ended is not None:
            claim_log(claim, "holder_gone").info(
                "record {}: the process that held claim {} for {} has ended; its lease ends now",
                claim.record_id,
                claim.token,
                claim.step,
            )
        return ended is not None

    def resume(self, record_id: int, resets: dict[str, object], by: str = "operator") -> str | None:
        """Clear the halt flag of the record's halted step and reset every guard the domain names
        in `resets` (a value of NOW: the moment of the resume), journaled as done by `by`, in one
        statement. The record's stage, or None when no step of it was halted (P5)."""
        statement = compose(
            "resume",
            resets=assignments(resets, "r_", set_to_now={column for column, value in resets.items() if value is NOW}),
        )
        params = {f"r_{column}": value for column, value in resets.items() if value is not NOW}
        params.update(id=record_id, by=by)
        with self.db.connection() as conn:
            row = conn.execute(statement, params).fetchone()
        if row is None:
            return None
        stage: str = row["stage"]
        record_log(record_id, stage, "resumed").bind(step=row["step"]).info(
            "record {} resumed by a human at stage {} ({})", record_id, stage, row["step"]
        )
        return stage

    def stage_of(self, record_id: int) -> str | None:
        with self.db.connection() as conn:
            row = conn.execute(query("stage_of"), {"id": record_id}).fetchone()
        stage: str | None = row["stage"] if row else None
        return stage

    def _write(self, claim: Claim, write: str, statement: sql.SQL | bytes, **params: object) -> DictRow | None:
        """One fenced write of the holder: its row, or None when refused (journaled)."""
        with self.db.connection() as conn:
            row = conn.execute(statement, {**_claim_params(claim), **params}).fetchone()
            if row is None:
                refuse(conn, claim, write)
        return row

    @staticmethod
    def _halt(conn: DictConnection, claim: Claim, reason: HaltReason, error: str, *, add_failures: int) -> bool:
        row = conn.execute(
            query("halt"),
            {**_claim_params(claim), "reason": reason.value, "error": error, "add_failures": add_failures},
        ).fetchone()
        return row is not None


def _claim_params(claim: Claim) -> dict[str, object]:
    return {"id": claim.record_id, "step": claim.step.value, "token": claim.token}


@functools.lru_cache(maxsize=32)
def _save_statement(step: Step, columns: tuple[str, ...]) -> bytes:
    """The save of `step` for the record's columns it saves, checked and composed once (a step
    always saves the same ones), as bytes like `text`'s statements. Raises ValueError for columns
    a step may not save (never cached: raised anew)."""
    forbidden = sorted(set(columns) & NOT_STEP_FIELDS)
    if forbidden or not columns:
        raise ValueError(f"a step may not save {forbidden or 'nothing'}")
    result = compose(f"save_{step.value}", owned=assignments(columns, "f_"))
    return compose("save", result=result).as_string().encode("ascii")


@functools.cache
def _checkpoint_statement(step: Step) -> bytes:
    """The checkpoint of `step`: the protocol's statement with the step's part composed in."""
    return compose("checkpoint", kept=query(f"checkpoint_{step.value}")).as_string().encode("ascii")


def _as_parameter(value: object) -> object:
    """A step's field as a statement parameter: structured values travel as JSON."""
    return Jsonb(value) if isinstance(value, (dict, list)) else value
