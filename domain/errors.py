"""The one root of the errors the service raises on purpose, each with a stable machine code.

A caller that wants "any refusal of ours" catches `TranscriberError`; one that wants a kind of
refusal catches its class. `code` is a short snake_case name that never changes once published:
the HTTP API answers it as `error` (`web.errors` alone chooses the HTTP status for it), a
script may match on it, and a message may be reworded freely beside it. A class gives its code
on its own line, `class NotHalted(TranscriberError, code="not_halted")`; one that gives none
keeps its parent's."""

from __future__ import annotations


class TranscriberError(Exception):
    """An error of the service's own, as opposed to a bug: its message is meant for a person."""

    code: str = "transcriber_error"

    def __init_subclass__(cls, *, code: str | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
