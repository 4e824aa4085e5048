"""What routers read from a request before any rule applies: the token of an
`Authorization: Bearer` header, and the record id written in a path. One reading each, so that
the owner's API, the panel and the pages accept and refuse exactly the same inputs."""

from fastapi import Request

from service import inputs
from web.errors import NOT_FOUND, ApiError


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None (no header, another
    scheme, or an empty token)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def record_id(raw: str) -> int:
    """The record id of a path; anything that is not one is answered exactly like a missing
    record (404), so a malformed id reveals nothing a missing one would not."""
    found = inputs.record_id(raw)
    if found is None:
        raise ApiError(404, *NOT_FOUND)
    return found
