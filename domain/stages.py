"""Stages a record reaches, and the step that moves it from one to the next."""
from __future__ import annotations

import enum


class Stage(enum.StrEnum):
    """The last milestone a record has reached. There is no "failed" stage: see `HaltReason`."""

    CREATED = "created"
    CONVERTED = "converted"
    DONE = "done"


class Step(enum.StrEnum):
    """A unit of work that moves a record from its `source` stage to its `target` stage."""

    CONVERT = "convert"
    RECOGNIZE = "recognize"
    # a side step: it works a done record's row in record_speakers (who spoke when) and never
    # moves the record's stage, so no stage leads to it
    DIARIZE = "diarize"

    @property
    def source(self) -> Stage:
        return _SOURCE[self]

    @property
    def target(self) -> Stage:
        return _TARGET[self]

    @classmethod
    def for_stage(cls, stage: Stage | str) -> Step | None:
        """The step that takes a record onward from `stage`; None once it is done."""
        stage = Stage(stage)
        return next((step for step in cls if step.source is stage and step is not cls.DIARIZE), None)


_SOURCE = {Step.CONVERT: Stage.CREATED, Step.RECOGNIZE: Stage.CONVERTED, Step.DIARIZE: Stage.DONE}
_TARGET = {Step.CONVERT: Stage.CONVERTED, Step.RECOGNIZE: Stage.DONE, Step.DIARIZE: Stage.DONE}
