"""The size limit on request bodies, before any route reads one: a body over the limit is
answered 413 with the code of an upload too large, with nothing stored and nothing spooled."""

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


class BodyLimit:
    """ASGI middleware: a body over the limit is refused with 413, whatever the method, whether
    its length is declared (refused before a byte is read) or it comes in chunks (refused as
    soon as the count passes the limit, so an endless chunked upload cannot fill the disk).
    The limit is `limit` at the (method, path) pairs of `large_at` (all, when not given) and
    `small` elsewhere."""

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

    def _limit(self, scope) -> tuple[int, str]:
        if self.small is None or self.large_at is None or (scope["method"], scope["path"]) in self.large_at:
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
        seen = 0

        async def counted():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(refusal)
            return message

        await self.app(scope, counted, send)
