"""Who is the operator behind a request to /admin: a token of the operators' own table, never an
owner's token. The panel's pages may sign an operator in by other means (a session) and pass
their own dependency to `web.admin.router`; this one reads `Authorization: Bearer <token>`."""

from typing import Callable

from fastapi import Request

from db import Store
from web.app import ApiError


def bearer_token(request: Request) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, or None."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def authenticate(store: Store, token: str | None) -> dict | None:
    """The operator (`{"id", "name"}`) whose token this is, or None."""
    return store.operator_by_token(token) if token else None


def bearer_operator(store: Store) -> Callable[[Request], dict]:
    """A FastAPI dependency: the operator of the request's bearer token, else 401."""

    def operator(request: Request) -> dict:
        found = authenticate(store, bearer_token(request))
        if found is None:
            raise ApiError(401, "unauthorized", "a valid operator token is required "
                                                "(`Authorization: Bearer <token>`; transcriber operator add NAME)")
        return found

    return operator
