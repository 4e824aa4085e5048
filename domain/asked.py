"""What an upload asks of recognition: everything that changes its result, in one place.

Two uploads of the same bytes by the same owner are one record only when they ask alike: the
OpenAI-compatible address attaching a retry to the record in the pipeline, an `Idempotency-Key`
sent again, `transcriber transcribe` going on with a run left unfinished. Whatever else a
request carries changes only how the one result is shown (`response_format`,
`timestamp_granularities[]`, a title), or nothing at all (`model` and `temperature`, which the
OpenAI-compatible address accepts while the configured engine decides), so it never makes a
repeat a new recognition.

A record keeps its `Asked` as written at intake (the column `records.asked`); the statements
that find an earlier record compare that one value (`db/queries/uploads.sql`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# What recognition is asked to write: the speech's own language, or that and an English
# translation beside it (Whisper's translate task; a multilingual model only).
TRANSCRIBE = "transcribe"
TRANSLATE = "translate"
TASKS = (TRANSCRIBE, TRANSLATE)


@dataclass(frozen=True)
class Asked:
    """`language`: the code asked for (None: the service's default); `prompt`: the text handed
    to the recognizer (None: none); `speakers`: auto, off or their number; `task`: TRANSCRIBE
    or TRANSLATE. Already checked (`service.intake`)."""

    language: str | None = None
    prompt: str | None = None
    speakers: str = "auto"
    task: str = TRANSCRIBE

    def value(self) -> dict[str, str | None]:
        """The value kept with the record and compared with an upload's (a JSON object). A plain
        transcription leaves `task` out: it is what every record kept before the task was asked
        for, so a repeat of one of those is still asked alike."""
        value = asdict(self)
        if self.task == TRANSCRIBE:
            del value["task"]
        return value


def task_of(asked: dict[str, str | None] | None) -> str:
    """The task a record's kept `asked` value (`records.asked`, None before it was kept) names."""
    return (asked or {}).get("task") or TRANSCRIBE
