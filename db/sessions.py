"""Browser sessions kept in PostgreSQL, so that every API process shares them and a restart keeps
them (statements in `queries/sessions.sql`, the table `sessions` in db/schema.txt).

The cookie holds a random session id; a row holds only its hash, the account, the hash of the
token the account had at sign-in, the CSRF token and the times. A session acts for its account
while that account's token is unchanged and, an owner, while it is enabled: a replaced token ends
its sessions in every process at the very next request, without any process keeping a copy of a
token, and disabling an owner deletes its sessions (`db.accounts`), so enabling it revives none.

A session's last use is written at most every `touch_seconds(idle)`: often enough that a session
in use never looks idle, seldom enough that a page's every request need not write.
"""

from __future__ import annotations

import secrets

from psycopg.rows import DictRow

from db.accounts import hash_token
from db.database import Database
from db.queries import query
from db.rows import only_row

KINDS = ("owner", "operator")
TOUCH_SECONDS = 60.0


def touch_seconds(idle_seconds: float) -> float:
    """How stale a live session's last use may be before a request writes it again: a tenth of
    the idle time, at most a minute. An idle session so ends between nine tenths of the idle time
    and the whole of it after its last request, whatever the idle time."""
    return min(TOUCH_SECONDS, idle_seconds / 10)


class SessionRows:
    """Browser sessions; a part of `db.store.Store`."""

    db: Database

    def open_session(self, kind: str, token: str, lifetime_seconds: float) -> tuple[str, str] | None:
        """A new session for the account (of `kind`) holding `token`: its id (for the cookie only)
        and its CSRF token. None when no such account holds the token."""
        if kind not in KINDS:
            raise ValueError(f"unknown session kind {kind!r}")
        session_id, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(24)
        row = self.db.one(
            query(f"open_{kind}_session"),
            {
                "id_hash": hash_token(session_id),
                "csrf": csrf,
                "token_hash": hash_token(token),
                "lifetime": lifetime_seconds,
            },
        )
        return (session_id, csrf) if row is not None else None

    def live_session(self, session_id: str | None, kind: str, idle_seconds: float) -> DictRow | None:
        """The live session of `kind` with this id: `{account_id, name, csrf}`, or None."""
        if not session_id:
            return None
        return self.db.one(
            query("live_session"),
            {
                "id_hash": hash_token(session_id),
                "kind": kind,
                "idle": idle_seconds,
                "touch": touch_seconds(idle_seconds),
            },
        )

    def end_session(self, session_id: str | None) -> None:
        if session_id:
            self.db.one(query("end_session"), {"id_hash": hash_token(session_id)})

    def sweep_sessions(self, idle_seconds: float) -> int:
        """Delete every session that can never be used again; return how many."""
        with self.db.connection() as conn:
            swept: int = only_row(conn.execute(query("sweep_sessions"), {"idle": idle_seconds}))["swept"]
        return swept
