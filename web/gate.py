"""The token before the body: an upload is refused before a byte of its body is read unless its token is good.

FastAPI reads and parses a request's body (a JSON document into memory, a multipart upload onto
disk) before a route's dependencies check its token, so a client with no token could make the
server hold hundreds of MB. This ASGI middleware sits in front of the routes and decides a
request that carries a body from its headers alone: the bearer token must belong to an owner, or
to an operator below /admin, unless `web.sessions`, outside this layer, has found a live session
of that kind for the request's cookie (and checked its CSRF token); a disabled owner has none, its
sessions having ended with its disabling. Otherwise the answer is 401 (403 for a disabled owner's
token) at once, with `Connection: close`; the body is never read, so it is neither
buffered nor spooled, and the server's flow control stops the client sending more than a socket
buffer of it.

Requests without a body pass on: the routes check their tokens as before, with the same rules,
so nothing answers differently here than it would there, only sooner. The sign-in forms, which
carry a token in their body, are exempt.
"""

from __future__ import annotations

from anyio import to_thread

from db import Store
from web.auth import enabled_owner, operator_by_token, owner_by_token
from web.errors import ApiError, error_response
from web.openai_compat import openai_error
from web.sessions import cookie_kind

OPENAI_PREFIX = "/v1/"


def has_body(headers: dict[bytes, bytes]) -> bool:
    """Whether the request carries a body (HTTP/1.1: a length above 0, or a chunked one)."""
    length = headers.get(b"content-length", b"0").strip()
    return b"transfer-encoding" in headers or not (length.isdigit() and int(length) == 0)


def bearer(headers: dict[bytes, bytes]) -> str | None:
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _has_session(scope) -> bool:
    """Whether `web.sessions` found a live session of the kind this path wants for the request
    (never a disabled owner's: `db.sessions` finds none)."""
    session = scope.get("state", {}).get("session")
    return session is not None and session.kind == cookie_kind(scope["path"])


class TokenGate:
    """ASGI middleware: a request with a body and no valid token is refused before its body is read."""

    def __init__(self, app, store: Store, exempt: frozenset[str]):
        self.app, self.store, self.exempt = app, store, exempt

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in self.exempt:
            return await self.app(scope, receive, send)
        headers = dict(scope["headers"])
        if not has_body(headers) or _has_session(scope):
            return await self.app(scope, receive, send)
        refusal = await to_thread.run_sync(self._refusal, scope["path"], bearer(headers))
        if refusal is None:
            return await self.app(scope, receive, send)
        if scope["path"].startswith(OPENAI_PREFIX):
            response = openai_error(refusal.status, refusal.code, refusal.message, headers={"Connection": "close"})
        else:
            response = error_response(refusal.status, refusal.code, refusal.message)
            response.headers["Connection"] = "close"
        await response(scope, receive, send)

    def _refusal(self, path: str, token: str | None) -> ApiError | None:
        """Why the token may not send a body to `path`, or None when it may."""
        if cookie_kind(path) == "operator":
            if operator_by_token(self.store, token) is None:
                return ApiError(
                    401, "unauthorized", "a valid operator token is required (`Authorization: Bearer <token>`)"
                )
            return None
        try:
            enabled_owner(owner_by_token(self.store, token))
        except ApiError as refusal:
            return refusal
        return None
