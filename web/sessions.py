"""Browser sessions for the owner's page and the operator's panel.

A person signs in once with their token; the browser then holds only a random session id in an
HttpOnly, SameSite=Strict cookie. The session lives in this process's memory (a restart signs
everyone out) and keeps the token there, so every request made with the cookie is checked by the
very same rules as a request with `Authorization: Bearer` — a rotated or disabled token ends its
sessions at once. The token never appears in a URL, a cookie, a page or the log.

The middleware below turns a valid session cookie into that header for the API and the
`/admin/api` addresses. A request that changes something (any method but GET/HEAD/OPTIONS) must
also carry the session's CSRF token in `X-CSRF-Token` and, when the browser names an origin, come
from this very host; otherwise it is refused with 403 before it reaches the API.
"""
from __future__ import annotations

import hmac
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.cookies import SimpleCookie

OWNER_COOKIE = "transcriber_session"
OPERATOR_COOKIE = "transcriber_admin"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
IDLE_SECONDS = 12 * 3600


@dataclass
class Session:
    kind: str  # "owner" or "operator"
    token: str = field(repr=False)
    name: str
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)
    seen: float = field(default_factory=time.monotonic)


class Sessions:
    """Session ids to sessions, in memory; an idle session expires after `idle` seconds."""

    def __init__(self, idle: float = IDLE_SECONDS):
        self.idle = idle
        self._lock = threading.Lock()
        self._by_id: dict[str, Session] = {}

    def open(self, kind: str, token: str, name: str) -> tuple[str, Session]:
        session_id = secrets.token_urlsafe(32)
        session = Session(kind=kind, token=token, name=name)
        with self._lock:
            self._expire()
            self._by_id[session_id] = session
        return session_id, session

    def get(self, session_id: str | None, kind: str) -> Session | None:
        if not session_id:
            return None
        with self._lock:
            session = self._by_id.get(session_id)
            if session is None or session.kind != kind:
                return None
            if time.monotonic() - session.seen > self.idle:
                del self._by_id[session_id]
                return None
            session.seen = time.monotonic()
            return session

    def close(self, session_id: str | None) -> None:
        with self._lock:
            self._by_id.pop(session_id or "", None)

    def _expire(self) -> None:
        now = time.monotonic()
        for stale in [k for k, s in self._by_id.items() if now - s.seen > self.idle]:
            del self._by_id[stale]


def cookies_of(headers) -> dict[str, str]:
    """The request's cookies from raw ASGI headers or a mapping with `cookie`."""
    raw = headers.get("cookie", "") if hasattr(headers, "get") else ""
    jar = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:  # a malformed cookie header counts as no cookie
        return {}
    return {key: morsel.value for key, morsel in jar.items()}


def same_origin(origin: str | None, host: str | None) -> bool:
    """True when the browser named no origin, or named this very host."""
    if not origin:
        return True
    scheme, _, rest = origin.partition("://")
    return scheme in ("http", "https") and bool(host) and rest == host


def cookie_kind(path: str) -> tuple[str, str]:
    """Which session a path belongs to: the panel's below /admin, the owner's elsewhere."""
    if path == "/admin" or path.startswith("/admin/"):
        return "operator", OPERATOR_COOKIE
    return "owner", OWNER_COOKIE


def set_cookie_header(name: str, value: str, *, path: str, secure: bool, clear: bool = False) -> str:
    parts = [f"{name}={value if not clear else ''}", f"Path={path}", "HttpOnly", "SameSite=Strict"]
    if clear:
        parts.append("Max-Age=0")
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


class SessionAuth:
    """ASGI middleware: a valid session cookie stands for the bearer token of its session.

    `exempt` paths (the sign-in and sign-out forms) do their own checks."""

    def __init__(self, app, sessions: Sessions, exempt: frozenset[str]):
        self.app, self.sessions, self.exempt = app, sessions, exempt

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in self.exempt:
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if "authorization" in headers:
            return await self.app(scope, receive, send)
        kind, cookie = cookie_kind(scope["path"])
        session = self.sessions.get(cookies_of(headers).get(cookie), kind)
        if session is None:
            return await self.app(scope, receive, send)
        if scope["method"] not in SAFE_METHODS:
            sent = headers.get("x-csrf-token", "")
            if not (sent and hmac.compare_digest(sent, session.csrf)) \
                    or not same_origin(headers.get("origin"), headers.get("host")):
                return await _refuse(send, 403, "csrf", "this change needs the page's CSRF token from this site")
        scope = dict(scope)
        scope["headers"] = [*scope["headers"], (b"authorization", f"Bearer {session.token}".encode("latin-1"))]
        return await self.app(scope, receive, send)


async def _refuse(send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": code, "message": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
