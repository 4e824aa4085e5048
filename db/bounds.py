"""This thread's bound on its waits for the database: a statement, or a connection from the pool,
that gets no answer within it fails instead of holding the thread (`db.database`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import psycopg


class NoAnswer(psycopg.OperationalError):
    """A statement got no answer within its thread's bound (`bounded`); its connection
    was closed, since what it holds is unknown."""


# this thread's bound on every database wait (`bounded`): seconds, or None
_bounds = threading.local()


def thread_bound() -> float | None:
    return getattr(_bounds, "seconds", None)


def bound_thread(seconds: float | None) -> float | None:
    """From now on, each statement this thread runs and each wait for a pooled connection ends
    within `seconds` (None: unbounded), else NoAnswer or PoolTimeout. The bound before."""
    outer, _bounds.seconds = thread_bound(), seconds
    return outer


@contextlib.contextmanager
def bounded(seconds: float | None) -> Iterator[None]:
    """`bound_thread` for this block; nested blocks: the innermost holds."""
    outer = bound_thread(seconds)
    try:
        yield
    finally:
        bound_thread(outer)
