"""Who is behind a request: an owner (the records API, the OpenAI-compatible address, the owner's
page) or an operator (the panel). Both hold a bearer token, sent as `Authorization: Bearer` or
stood for by a browser session (`web.sessions` turns the cookie into that header), so one
reading of the header serves both. An operator's token is never an owner's, nor the reverse."""

from typing import Callable

from fastapi import Request

from db import Store
from web.errors import ApiError
from web.parsing import bearer_token


def owner_by_token(store: Store, token: str | None) -> dict | None:
    """The owner whose token this is (disabled or not), or None."""
    return store.owner_by_token(token) if token else None


def enabled_owner(found: dict | None) -> dict:
    """`found` when it is an owner allowed in: 401 when no owner holds the token, 403 when the
    owner is disabled (the message says how the operator enables it again)."""
    if found is None:
        raise ApiError(401, "unauthorized", "a valid `Authorization: Bearer <token>` header is required")
    if found["disabled"]:
        raise ApiError(403, "owner_disabled", f"the owner {found['name']!r} is disabled; "
                       "the service's operator can enable it (transcriber owner enable NAME)")
    return found


def bearer_owner(store: Store) -> Callable[[Request], dict]:
    """A FastAPI dependency: the enabled owner of the request's bearer token, else 401 or 403."""

    def owner(request: Request) -> dict:
        return enabled_owner(owner_by_token(store, bearer_token(request)))

    return owner


def operator_by_token(store: Store, token: str | None) -> dict | None:
    """The operator (`{"id", "name"}`) whose token this is, or None."""
    return store.operator_by_token(token) if token else None


def bearer_operator(store: Store) -> Callable[[Request], dict]:
    """A FastAPI dependency: the operator of the request's bearer token, else 401."""

    def operator(request: Request) -> dict:
        found = operator_by_token(store, bearer_token(request))
        if found is None:
            raise ApiError(401, "unauthorized", "a valid operator token is required "
                                                "(`Authorization: Bearer <token>`; transcriber operator add NAME)")
        return found

    return operator
