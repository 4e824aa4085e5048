"""Stages a record reaches, and the steps that take it from one to the next."""

from __future__ import annotations

import enum


class Stage(enum.StrEnum):
    """The last milestone a record has reached. There is no "failed" stage: see `HaltReason`."""

    CREATED = "created"
    CONVERTED = "converted"
    DONE = "done"


class Step(enum.StrEnum):
    """A unit of work on a record, due while the record stands at the step's `source` stage; its
    save takes the record to the `target` stage. Every step is claimed, fenced, checkpointed,
    failed, halted and resumed by the same protocol (docs/architecture.md)."""

    CONVERT = "convert"
    RECOGNIZE = "recognize"
    # a side step: who spoke when in a done record. It never moves the stage, and a halt of it
    # leaves the record done and its text served.
    DIARIZE = "diarize"

    @property
    def source(self) -> Stage:
        return _SOURCE[self]

    @property
    def target(self) -> Stage:
        return _TARGET[self]

    @property
    def advances(self) -> bool:
        """Whether its save moves the record to another stage (a side step's does not)."""
        return self.source is not self.target

    @classmethod
    def first(cls) -> Step:
        """The step an accepted record waits for."""
        return cls.CONVERT

    @classmethod
    def for_stage(cls, stage: Stage | str) -> Step | None:
        """The step that takes a record onward from `stage`; None once it is done."""
        stage = Stage(stage)
        return next((step for step in cls if step.source is stage and step.advances), None)

    def next(self, *, speakers: bool) -> Step | None:
        """The step a record waits for once this one is saved: the next stage's, then (when
        `speakers` are wanted and can be found) the diarize step; None when nothing follows."""
        following = Step.for_stage(self.target) if self.advances else None
        if following is None and self.advances and speakers:
            return Step.DIARIZE
        return following


_SOURCE = {Step.CONVERT: Stage.CREATED, Step.RECOGNIZE: Stage.CONVERTED, Step.DIARIZE: Stage.DONE}
_TARGET = {Step.CONVERT: Stage.CONVERTED, Step.RECOGNIZE: Stage.DONE, Step.DIARIZE: Stage.DONE}
