"""The store's part for the web surfaces: erasing a record for good, the original audio for the
owner's player, operator accounts and the operator's list of halted records.

A mixin of `db.store.Store`, kept in its own module; every statement is a named query of
`queries/web.sql`.
"""
from __future__ import annotations

import hmac
import secrets

import psycopg
from loguru import logger

from db.queries import query


class DuplicateOperator(ValueError):
    pass


class WebStore:
    db: object  # the Database, set by Store

    # --- deletion for good ----------------------------------------------------------------------

    def delete_record(self, record_id: int, owner_id: int | None, *, by: str, role: str) -> str | None:
        """Erase the record, its audio and its text, and every journal line about it but one:
        that `by` (acting as `role`) deleted it. The owner's own only, unless `owner_id` is None.
        Returns the stage it had reached, or None when there is no such record of that owner.

        The record's row is deleted first, so a step's write in flight finishes before it (and
        is then erased too) or finds no row after it (refused; its late journal line is dropped).
        """
        with self.db.transaction() as conn:
            row = conn.execute(query("erase_record"), {"id": record_id, "owner_id": owner_id}).fetchone()
            if row is None:
                return None
            conn.execute(query("journal_deletion"), {"id": record_id, "stage": row["stage"], "by": by, "role": role})
            conn.execute(query("erase_journal"), {"id": record_id})
            blobs = [b for b in (row["original_blob_id"], row["converted_blob_id"]) if b is not None]
            conn.execute(query("erase_blobs"), {"blob_ids": blobs})
        logger.bind(record_id=record_id, stage=row["stage"], event="deleted").info(
            "record {} deleted for good by {} {}", record_id, role, by)
        return row["stage"]

    def original_audio(self, record_id: int, owner_id: int) -> dict | None:
        """The blob, size, media type and uploaded name of the owner's original recording."""
        with self.db.transaction() as conn:
            return conn.execute(query("original_audio"), {"id": record_id, "owner_id": owner_id}).fetchone()

    # --- operators --------------------------------------------------------------------------------

    def add_operator(self, name: str) -> str:
        """Create an operator account for /admin and return its token; only its hash is stored."""
        from db.store import hash_token

        token = secrets.token_urlsafe(32)
        try:
            with self.db.transaction() as conn:
                conn.execute(query("create_operator"), {"name": name, "token_hash": hash_token(token)})
        except psycopg.errors.UniqueViolation as error:
            raise DuplicateOperator(f"an operator named {name!r} already exists") from error
        except psycopg.errors.CheckViolation as error:
            raise DuplicateOperator("an operator's name may not be empty") from error
        logger.info("operator {} added", name)
        return token

    def operator_by_token(self, token: str) -> dict | None:
        """The operator whose token this is (looked up by hash, compared in constant time)."""
        from db.store import hash_token

        if not token:
            return None
        digest = hash_token(token)
        with self.db.transaction() as conn:
            row = conn.execute(query("operator_by_token_hash"), {"token_hash": digest}).fetchone()
        if row is None or not hmac.compare_digest(row["token_hash"], digest):
            return None
        return {"id": row["id"], "name": row["name"]}

    def halted_records(self, limit: int, offset: int) -> tuple[list[dict], int]:
        with self.db.transaction() as conn:
            rows = conn.execute(query("halted_records"), {"limit": limit, "offset": offset}).fetchall()
            total = conn.execute(query("count_halted")).fetchone()["total"]
        return rows, total
