"""Who is behind a request: an owner (the records API, the OpenAI-compatible address, the owner's
page) or an operator (the panel). Both hold a bearer token, sent as `Authorization: Bearer`, or a
browser session that acts for the account while its token is unchanged and the owner enabled
(`web.sessions` puts the session, checked against the database, in the request's state; a
disabled owner has none). An operator's token is never an
owner's, nor the reverse, and neither is a session of one kind."""

from collections.abc import Callable

from fastapi import Request

from db import Store
from web.errors import ApiError
from web.parsing import bearer_token
from web.sessions import Session


def session_of(request: Request, kind: str) -> Session | None:
    """The request's browser session of `kind`, when its cookie stands for it (`web.sessions`)."""
    session = getattr(request.state, "session", None)
    return session if isinstance(session, Session) and session.kind == kind else None


def owner_by_token(store: Store, token: str | None) -> dict | None:
    """The owner whose token this is (disabled or not), or None."""
    return store.owner_by_token(token) if token else None


def enabled_owner(found: dict | None) -> dict:
    """`found` when it is an owner allowed in: 401 when no owner holds the token, 403 when the
    owner is disabled (the message says how the operator enables it again)."""
    if found is None:
        raise ApiError(401, "unauthorized", "a valid `Authorization: Bearer <token>` header is required")
    if found["disabled"]:
        raise ApiError(
            403,
            "owner_disabled",
            f"the owner {found['name']!r} is disabled; "
            "the service's operator can enable it (transcriber owner enable NAME)",
        )
    return found


def bearer_owner(store: Store) -> Callable[[Request], dict]:
    """A FastAPI dependency: the enabled owner of the request's bearer token, else 401 or 403."""

    def owner(request: Request) -> dict:
        session = session_of(request, "owner")
        if session is not None:  # live only while the owner is enabled
            return {"id": session.account_id, "name": session.name, "disabled": False}
        return enabled_owner(owner_by_token(store, bearer_token(request)))

    return owner


def operator_by_token(store: Store, token: str | None) -> dict | None:
    """The operator (`{"id", "name"}`) whose token this is, or None."""
    return store.operator_by_token(token) if token else None


def bearer_operator(store: Store) -> Callable[[Request], dict]:
    """A FastAPI dependency: the operator of the request's bearer token, else 401."""

    def operator(request: Request) -> dict:
        session = session_of(request, "operator")
        found = (
            {"id": session.account_id, "name": session.name}
            if session is not None
            else operator_by_token(store, bearer_token(request))
        )
        if found is None:
            raise ApiError(
                401,
                "unauthorized",
                "a valid operator token is required (`Authorization: Bearer <token>`; transcriber operator add NAME)",
            )
        return found

    return operator
