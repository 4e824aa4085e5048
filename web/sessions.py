"""Browser sessions for the owner's page and the operator's panel.

A person signs in once with their token; the browser then holds only a random session id in an
HttpOnly, SameSite=Strict cookie. The session is a row in PostgreSQL (`db.sessions`), so every
`serve` process behind one address shares it and a restart keeps it. The row keeps the session
id's hash and the hash of the token signed in with, never a token: every request made with the
cookie acts for the account while its token is unchanged and, an owner's, while the owner is
enabled: a replaced token ends its sessions at once, and disabling an owner ends its sessions for
good (enabling it again revives none). A session idle for TRANSCRIBER_SESSION_IDLE_SECONDS (any
value: its last use is written often enough, `db.sessions`), or older than
SESSION_LIFETIME_SECONDS, has ended;
each API process sweeps ended rows every SWEEP_SECONDS at most. The token never appears in a URL,
a cookie, a page or the log.

Over HTTPS (also behind a proxy that says so in X-Forwarded-Proto, from an address uvicorn trusts:
FORWARDED_ALLOW_IPS) the cookie is `__Host-` prefixed and Secure, so no other host or plain-HTTP
page can set or shadow it; over plain HTTP (a browser refuses those there) it is the plain name.

The middleware below resolves a valid session cookie to its account, which the API's and
`/admin/api`'s token checks (`web.auth`) accept like a bearer token. A request that changes
something (any method but GET/HEAD/OPTIONS) must also carry the session's CSRF token in
`X-CSRF-Token` (compared in constant time) and, when the browser names an origin, come from this
very host; otherwise it is refused with 403 before it reaches the API, with `Connection: close`
(its body is never read).
"""

from __future__ import annotations

import hmac
import json
import threading
from dataclasses import dataclass, field
from http.cookies import SimpleCookie

from anyio import to_thread
from loguru import logger

from db import Store

OWNER_COOKIE = "transcriber_session"
OPERATOR_COOKIE = "transcriber_admin"
SECURE_PREFIX = "__Host-"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SESSION_LIFETIME_SECONDS = 30 * 24 * 3600
SWEEP_SECONDS = 300.0


@dataclass(frozen=True)
class Session:
    kind: str  # "owner" or "operator"
    account_id: int
    name: str
    csrf: str = field(default="", repr=False)


class Sessions:
    """The sessions of one app, kept in the database; an idle session ends after `idle` seconds."""

    def __init__(self, store: Store, idle: float):
        self.store, self.idle = store, idle
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None

    def open(self, kind: str, token: str) -> str | None:
        """A new session for the account of `kind` holding `token`: its id, or None."""
        opened = self.store.open_session(kind, token, SESSION_LIFETIME_SECONDS)
        return opened[0] if opened else None

    def get(self, session_id: str | None, kind: str) -> Session | None:
        row = self.store.live_session(session_id, kind, self.idle)
        if row is None:
            return None
        return Session(kind=kind, account_id=row["account_id"], name=row["name"], csrf=row["csrf"])

    def close(self, session_id: str | None) -> None:
        self.store.end_session(session_id)

    def sweep(self) -> int:
        return self.store.sweep_sessions(self.idle)

    def start_sweeping(self, every: float | None = None) -> None:
        """Sweep ended sessions now and then on a thread of this process (any number of
        processes may: a row goes once)."""
        every = every if every is not None else min(SWEEP_SECONDS, max(self.idle / 2, 1.0))
        self._stop.clear()

        def run():
            while not self._stop.wait(every):
                try:
                    swept = self.sweep()
                except Exception as error:  # noqa: BLE001 - the database is away: the next round tries again
                    logger.warning("session sweep failed ({})", type(error).__name__)
                    continue
                if swept:
                    logger.info("swept {} ended browser session(s)", swept)

        self._sweeper = threading.Thread(target=run, name="session-sweep", daemon=True)
        self._sweeper.start()

    def stop_sweeping(self) -> None:
        self._stop.set()
        if self._sweeper is not None:
            self._sweeper.join(timeout=5)
            self._sweeper = None


def cookies_of(headers) -> dict[str, str]:
    """The request's cookies from raw ASGI headers or a mapping with `cookie`."""
    raw = headers.get("cookie", "") if hasattr(headers, "get") else ""
    jar = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # noqa: BLE001 - a malformed cookie header counts as no cookie
        return {}
    return {key: morsel.value for key, morsel in jar.items()}


def same_origin(origin: str | None, host: str | None) -> bool:
    """True when the browser named no origin, or named this very host."""
    if not origin:
        return True
    scheme, _, rest = origin.partition("://")
    return scheme in ("http", "https") and bool(host) and rest == host


def csrf_matches(sent: str | None, expected: str) -> bool:
    """The CSRF token sent is the session's, compared in constant time (as bytes: any text a
    client sends compares, none raises)."""
    if not sent:
        return False
    return hmac.compare_digest(sent.encode("utf-8", "surrogateescape"), expected.encode())


def cookie_kind(path: str) -> str:
    """Which session a path belongs to: the panel's below /admin, the owner's elsewhere."""
    return "operator" if path == "/admin" or path.startswith("/admin/") else "owner"


def cookie_name(kind: str, secure: bool) -> str:
    """The session cookie of `kind`: `__Host-` prefixed over HTTPS, the plain name over HTTP."""
    name = OPERATOR_COOKIE if kind == "operator" else OWNER_COOKIE
    return SECURE_PREFIX + name if secure else name


def cookie_path(kind: str, secure: bool) -> str:
    """A `__Host-` cookie must have Path=/; over plain HTTP the panel's stays below /admin."""
    return "/admin" if kind == "operator" and not secure else "/"


def set_cookie_header(name: str, value: str, *, path: str, secure: bool, clear: bool = False) -> str:
    parts = [f"{name}={value if not clear else ''}", f"Path={path}", "HttpOnly", "SameSite=Strict"]
    if clear:
        parts.append("Max-Age=0")
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


class SessionAuth:
    """ASGI middleware: a valid session cookie stands for its account, put in the request's state
    (`scope["state"]["session"]`) where `web.auth` finds it.

    `exempt` paths (the sign-in and sign-out forms) do their own checks."""

    def __init__(self, app, sessions: Sessions, exempt: frozenset[str]):
        self.app, self.sessions, self.exempt = app, sessions, exempt

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in self.exempt:
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if "authorization" in headers:
            return await self.app(scope, receive, send)
        kind = cookie_kind(scope["path"])
        session_id = cookies_of(headers).get(cookie_name(kind, scope.get("scheme") == "https"))
        session = await to_thread.run_sync(self.sessions.get, session_id, kind) if session_id else None
        if session is None:
            return await self.app(scope, receive, send)
        if scope["method"] not in SAFE_METHODS:
            sent = headers.get("x-csrf-token", "")
            if not csrf_matches(sent, session.csrf) or not same_origin(headers.get("origin"), headers.get("host")):
                return await _refuse(send, 403, "csrf", "this change needs the page's CSRF token from this site")
        scope = dict(scope)
        scope["state"] = {**scope.get("state", {}), "session": session}
        return await self.app(scope, receive, send)


async def _refuse(send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": code, "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
