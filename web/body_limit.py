"""The size limit on request bodies, before any route reads one: a body over the limit is
answered 413 with the code of an upload too large and `Connection: close`, with nothing stored
and nothing spooled, whatever the method, the content type or the framing."""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException

from domain.errors import TranscriberError
from service.intake import TooLarge


class BodyTooLarge(TranscriberError, HTTPException, code=TooLarge.code):
    """Raised into the application from the body stream when it passes the size limit; answered
    like any HTTP error, as 413, by the application's handler."""

    def __init__(self, message: str):
        super().__init__(413, message)


class _CountedBody:
    """A request's body as it is received, counted against the limit."""

    def __init__(self, receive, limit: int, refusal: str):
        self._receive, self.limit, self.refusal = receive, limit, refusal
        self.seen, self.finished, self.answered = 0, False, False

    @property
    def over(self) -> bool:
        return self.seen > self.limit

    async def _next(self):
        message = await self._receive()
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            self.finished = not message.get("more_body", False)
        else:  # the client went away: nothing more will come
            self.finished = True
        return message

    async def receive(self):
        """The application's read: refused once the count passes the limit (until it has
        answered; after that its reads only wait for the client to go)."""
        message = await self._next()
        if self.over and not self.answered:
            raise BodyTooLarge(self.refusal)
        return message

    async def drain(self) -> None:
        """Read what the application left of the body, no further than just past the limit.
        A route may answer without reading the body (a form's route given another content type);
        left unread, the server would read and discard the rest of it, however long, to keep the
        connection."""
        while not self.finished and not self.over:
            await self._next()


class BodyLimit:
    """ASGI middleware: a body over the limit is refused with 413, whatever the method, whether
    its length is declared (refused before a byte is read) or it comes in chunks (refused as
    soon as the count passes the limit, so an endless chunked upload cannot fill the disk), and
    whether the route reads it or not (what a route's answer leaves unread is read up to the
    limit before that answer goes out, and past the limit the answer is the 413). The 413 closes
    the connection, so nothing more of the body is read. The limit is `limit` at the (method,
    path) pairs of `large_at` (all, when not given; a path ending in `/` covers the addresses
    below it) and `small` elsewhere."""

    def __init__(
        self,
        app,
        limit: int,
        message: str,
        *,
        small: int | None = None,
        large_at: frozenset[tuple[str, str]] | None = None,
    ):
        self.app, self.limit, self.message = app, limit, message
        self.small, self.large_at = small, large_at

    def _large(self, method: str, path: str) -> bool:
        """Whether `large_at` names this method and path; a path there that ends in `/` names
        every address below it."""
        assert self.large_at is not None
        return (method, path) in self.large_at or any(
            method == where and at.endswith("/") and path.startswith(at) for where, at in self.large_at
        )

    def _limit(self, scope) -> tuple[int, str]:
        if self.small is None or self.large_at is None or self._large(scope["method"], scope["path"]):
            return self.limit, self.message
        return self.small, f"the request body is larger than the limit of {self.small // 1024} KB for this address"

    async def _refuse(self, send, message: str) -> None:
        body = json.dumps({"error": TooLarge.code, "message": message}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit, refusal = self._limit(scope)
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            return await self._refuse(send, refusal)
        body = _CountedBody(receive, limit, refusal)
        refused = False

        async def answer(message):
            nonlocal refused
            if message["type"] == "http.response.start":
                await body.drain()
                body.answered, refused = True, body.over
                if refused:  # the application's own answer (its 413, or one to a body it left unread) goes unsent
                    return await self._refuse(send, refusal)
            if not refused:
                await send(message)

        await self.app(scope, body.receive, answer)
