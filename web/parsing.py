"""What routers read from a request before any rule applies: the token of an
`Authorization: Bearer` header, an upload's `Idempotency-Key`, a header's byte count, whether a
body comes, and the record id written in a path. One reading each, so that the owner's API, the
panel and the pages accept and refuse exactly the same inputs."""

from fastapi import Request

from service import inputs
from web.errors import NOT_FOUND, ApiError


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None (no header, another
    scheme, or an empty token)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


MAX_IDEMPOTENCY_KEY = 255
_KEY_CHARACTERS = frozenset(range(0x21, 0x7F))  # visible ASCII: what a client can send back unchanged


def idempotency_key(request: Request) -> str | None:
    """The request's `Idempotency-Key` (1-255 visible ASCII characters), None without one;
    400 `bad_idempotency_key` for anything else, before anything is stored."""
    raw = request.headers.get("idempotency-key")
    if raw is None:
        return None
    key = raw.strip()
    if not 0 < len(key) <= MAX_IDEMPOTENCY_KEY or not set(key.encode("latin-1")) <= _KEY_CHARACTERS:
        raise ApiError(
            400, "bad_idempotency_key", f"Idempotency-Key must be 1-{MAX_IDEMPOTENCY_KEY} visible ASCII characters"
        )
    return key


def record_id(raw: str) -> int:
    """The record id of a path; anything that is not one is answered exactly like a missing
    record (404), so a malformed id reveals nothing a missing one would not."""
    found = inputs.record_id(raw)
    if found is None:
        raise ApiError(404, *NOT_FOUND)
    return found


def byte_count(raw: str | None, name: str = "Upload-Length") -> int | None:
    """A byte count of a header (None without the header); 400 for one that is not."""
    if raw is None:
        return None
    raw = raw.strip()
    if not raw.isdigit() or len(raw) > 18:
        raise ApiError(400, "bad_header", f"{name} must be a whole number of bytes")
    return int(raw)


def has_body(request: Request) -> bool:
    """Whether the request says a body comes (a length above nothing, or chunks)."""
    length = request.headers.get("content-length")
    return "transfer-encoding" in request.headers or (length is not None and length.strip() not in ("", "0"))
