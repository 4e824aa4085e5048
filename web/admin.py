"""The service owner's panel, as JSON under /admin/api (the pages at /admin call these): the
figures of `transcriber status`, owners with their audio hours and stored bytes against their
quotas, halted records, a record's journal, and Resume through the same domain action as
`transcriber resume`. Owners' names and record metadata only — never a transcript, a segment or
audio."""

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from db import Store
from domain.card import card
from domain.quotas import usage_view
from domain.resume import NotHalted, UnknownRecord, resume
from service.inputs import MAX_OFFSET
from web.errors import NOT_FOUND, ApiError, refusal
from web.paging import page
from web.parsing import record_id

PREFIX = "/admin/api"


def _json_value(value):
    """A database value as JSON can carry it: numerics as numbers, times in ISO 8601."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _addresses(number: int) -> dict:
    return {
        "card": f"{PREFIX}/records/{number}",
        "events": f"{PREFIX}/records/{number}/events",
        "resume": f"{PREFIX}/records/{number}/resume",
    }


def router(store: Store, operator: Callable[..., dict]) -> APIRouter:
    """The panel's API; `operator` is the dependency naming the caller (`web.auth`)."""
    routes = APIRouter(prefix=PREFIX, tags=["admin"])
    _add_overview(routes, store, operator)
    _add_records(routes, store, operator)
    return routes


def _halted_item(row: dict) -> dict:
    """One halted record as the panel lists it."""
    return {
        "id": row["id"],
        "owner": row["owner"],
        "title": row["title"],
        "source_name": row["source_name"],
        "stage": row["stage"],
        "reason": row["halt_reason"],
        "error": row["halt_error"],
        "attempts": row["failures"],
        "halted_at": _json_value(row["halted_at"]),
        "halted_seconds": round(float(row["halted_seconds"]), 1),
        "created_at": _json_value(row["created_at"]),
        "age_seconds": round(float(row["age_seconds"]), 1),
        "duration_seconds": row["duration_seconds"],
        "links": _addresses(row["id"]),
    }


def _add_overview(routes: APIRouter, store: Store, operator: Callable[..., dict]) -> None:
    """The whole service at a glance: who is signed in, the figures per stage, the halted
    records and the owners."""
    Operator = Annotated[dict, Depends(operator)]

    @routes.get("/whoami")
    def whoami(who: Operator):
        """The operator the token belongs to."""
        return {"name": who["name"]}

    @routes.get("/status")
    def status(who: Operator):
        """The figures of `transcriber status --json`: per stage, records active, claimed, waiting
        out a pause, halted, and the age of the oldest eligible one; plus totals."""
        stages = [{k: _json_value(v) for k, v in row.items()} for row in store.status()]
        totals = {key: sum(row[key] for row in stages) for key in ("active", "claimed", "waiting", "halted")}
        return {"stages": stages, "totals": totals, "at": datetime.now(UTC).isoformat()}

    @routes.get("/halted")
    def halted(
        who: Operator, limit: int = Query(default=50, ge=1, le=200), offset: int = Query(default=0, ge=0, le=MAX_OFFSET)
    ):
        """Halted records, longest halted first: owner, title, stage, reason, error, attempts, age."""
        rows, total = store.halted_records(limit, offset)
        return page([_halted_item(row) for row in rows], total, limit, offset, f"{PREFIX}/halted")

    @routes.get("/owners")
    def owners(who: Operator):
        """Every owner: state, record counts, audio hours and stored bytes against its quota."""
        return {
            "items": [
                {
                    "name": row["name"],
                    "disabled": row["disabled_at"] is not None,
                    "records": row["records"],
                    "done": row["done"],
                    "halted": row["halted"],
                    **usage_view(row),
                }
                for row in store.owners()
            ]
        }


def _metadata(store: Store, raw_id: str) -> dict:
    """Any owner's record's card, with its owner's name and the panel's addresses; 404 for none."""
    row = store.card_row(record_id(raw_id))
    if row is None:
        raise ApiError(404, *NOT_FOUND)
    return {**card(row), "owner": row["owner"], "admin_links": _addresses(row["id"])}


def _add_records(routes: APIRouter, store: Store, operator: Callable[..., dict]) -> None:
    """One record: its card, its journal, and Resume."""
    Operator = Annotated[dict, Depends(operator)]

    @routes.get("/records/{raw_id}")
    def record(raw_id: str, who: Operator):
        """A record's card with its owner's name (metadata only: no text)."""
        return _metadata(store, raw_id)

    @routes.get("/records/{raw_id}/events")
    def events(raw_id: str, who: Operator):
        """The record's event journal, oldest first (an erased record keeps its `deleted` line)."""
        found = store.events(record_id(raw_id))
        if not found:
            raise ApiError(404, *NOT_FOUND)
        return {"record": found[0]["record"], "events": [{k: _json_value(v) for k, v in e.items()} for e in found]}

    @routes.post("/records/{raw_id}/resume")
    def resume_record(raw_id: str, who: Operator):
        """Resume a halted record through the domain (P5), journaled as `resumed` with origin
        `human` and the operator's name; 409 when it is not halted."""
        number = record_id(raw_id)
        try:
            stage = resume(store, number, by=who["name"])
        except UnknownRecord:
            raise ApiError(404, *NOT_FOUND) from None
        except NotHalted as error:
            raise refusal(error, stage=error.stage) from None
        return {"id": number, "stage": stage, "resumed_by": who["name"], "card": _metadata(store, str(number))}
