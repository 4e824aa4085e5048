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


@dataclass(frozen=True)
class Asked:
    """`language`: the code asked for (None: the service's default); `prompt`: the text handed
    to the recognizer (None: none); `speakers`: auto, off or their number. Already checked
    (`service.intake`)."""

    language: str | None = None
    prompt: str | None = None
    speakers: str = "auto"

    def value(self) -> dict[str, str | None]:
        """The value kept with the record and compared with an upload's (a JSON object)."""
        return asdict(self)
