"""Accounts: owners (whose API tokens reach their own records) and operators (whose tokens open
/admin), apart from each other.

A token is shown once, when it is made; only its hash is stored. Every token is checked the same
way: looked up by its hash (so the index compares hashes, not the secret) and then compared in
constant time. The statements are in `queries/accounts.sql`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

import psycopg
from loguru import logger
from psycopg.rows import DictRow

from db.database import Database
from db.queries import query
from domain.errors import TranscriberError


class DuplicateOwner(TranscriberError, code="duplicate_owner"):
    """No owner was created: another owner has the name, or the name is empty."""


class DuplicateOperator(TranscriberError, code="duplicate_operator"):
    """No operator was created: another operator has the name, or the name is empty."""


def hash_token(token: str) -> str:
    """What is stored of a token, and what a presented token is looked up by."""
    return hashlib.sha256(token.encode()).hexdigest()


def _fresh_token() -> tuple[str, str]:
    """A new token and its hash."""
    token = secrets.token_urlsafe(32)
    return token, hash_token(token)


def _owner(row: DictRow) -> dict[str, Any]:
    return {"id": row["account_id"], "name": row["account_name"], "disabled": row["account_disabled_at"] is not None}


class Accounts:
    """Owners and operators; a part of `db.store.Store`."""

    db: Database

    # --- creating an account and checking a token, for both kinds ---------------------------------

    def _create_account(self, statement: str, kind: str, name: str, refused: type[TranscriberError]) -> str:
        """Create an account with `statement` and return its fresh token; only its hash is stored."""
        token, token_hash = _fresh_token()
        try:
            with self.db.transaction() as conn:
                conn.execute(query(statement), {"name": name, "token_hash": token_hash})
        except psycopg.errors.UniqueViolation as error:
            raise refused(f"an {kind} named {name!r} already exists") from error
        except psycopg.errors.CheckViolation as error:
            raise refused(f"an {kind}'s name may not be empty") from error
        logger.info("{} {} added", kind, name)
        return token

    def _by_token(self, statement: str, token: str, **params: object) -> DictRow | None:
        """The row `statement` finds by the token's hash, if the hash it holds is the token's."""
        if not token:
            return None
        token_hash = hash_token(token)
        row = self.db.one(query(statement), {"token_hash": token_hash, **params})
        if row is None or not hmac.compare_digest(row["token_hash"], token_hash):
            return None
        return row

    # --- owners -------------------------------------------------------------------------------

    def add_owner(self, name: str) -> str:
        """Create an owner and return its API token."""
        return self._create_account("create_owner", "owner", name, DuplicateOwner)

    def owner_by_name(self, name: str) -> DictRow | None:
        with self.db.connection() as conn:
            return conn.execute(query("owner_by_name"), {"name": name}).fetchone()

    def owner_by_token(self, token: str) -> dict[str, Any] | None:
        """The owner whose API token this is: its id, name and whether it is disabled."""
        row = self._by_token("owner_by_token_hash", token)
        return _owner(row) if row is not None else None

    def owner_and_card_row(self, token: str, record_id: int) -> tuple[dict[str, Any] | None, DictRow | None]:
        """owner_by_token and that owner's card_row together, in one statement (one round trip):
        a new token, a disabled owner or a deleted record count from the very next request."""
        row = self._by_token("owner_card_by_token_hash", token, id=record_id)
        if row is None:
            return None, None
        return _owner(row), (row if row["id"] is not None else None)

    def new_token(self, name: str) -> str | None:
        """Give the owner called `name` a new API token and return it (None: no such owner).
        The old token is refused from this moment on: no process keeps a copy of it."""
        token, token_hash = _fresh_token()
        with self.db.transaction() as conn:
            row = conn.execute(query("replace_owner_token"), {"name": name, "token_hash": token_hash}).fetchone()
        if row is None:
            return None
        logger.info("owner {} has a new API token; the old one is refused", name)
        return token

    def set_owner_disabled(self, name: str, disabled: bool) -> bool | None:
        """Disable or enable the owner called `name`; return whether it was disabled before
        (None: no such owner). A disabled owner's token is refused and its browser sessions end
        (enabling it again revives none: each browser signs in again); its records stay."""
        with self.db.transaction() as conn:
            row = conn.execute(query("set_owner_disabled"), {"name": name, "disabled": disabled}).fetchone()
            if row is not None and disabled:
                conn.execute(query("end_owner_sessions"), {"owner_id": row["id"]})
        if row is None:
            return None
        logger.info("owner {} {}", name, "disabled" if disabled else "enabled")
        was_disabled: bool = row["was_disabled"]
        return was_disabled

    def owners(self) -> list[DictRow]:
        """Every owner with its state and record counts (never a token)."""
        with self.db.transaction() as conn:
            return conn.execute(query("list_owners")).fetchall()

    # --- operators ------------------------------------------------------------------------------

    def add_operator(self, name: str) -> str:
        """Create an operator account for /admin and return its token."""
        return self._create_account("create_operator", "operator", name, DuplicateOperator)

    def operator_by_token(self, token: str) -> dict[str, Any] | None:
        """The operator whose token this is: its id and name."""
        row = self._by_token("operator_by_token_hash", token)
        return {"id": row["id"], "name": row["name"]} if row is not None else None
