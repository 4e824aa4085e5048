"""The owner's full-text search over HTTP: `GET /search`. The owner's own words only;
the operator's panel has no such address (operators never see transcript text)."""

from collections.abc import Callable
from datetime import date
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Query

from db import Store
from domain.search import MAX_QUERY_CHARS
from domain.stages import Stage
from service import inputs
from service.search import MeaningUnavailable, QueryProblem
from service.search import search as find
from web.errors import ApiError, refusal
from web.paging import page_address

MAX_PAGE = 100


def router(store: Store, owner: Callable[..., dict]) -> APIRouter:
    routes = APIRouter(tags=["search"])
    Owner = Annotated[dict, Depends(owner)]

    @routes.get("/search")
    def search(
        who: Owner,
        q: str = Query(
            description='words; "quotes" make a phrase, `or` and `-word` work, the last word typed matches as a prefix'
        ),
        limit: int = Query(default=20, ge=1, le=MAX_PAGE),
        offset: int = Query(default=0, ge=0, le=100_000),
        stage: Stage | None = None,
        topic: str | None = Query(default=None, max_length=inputs.MAX_TOPIC),
        from_: date | None = Query(default=None, alias="from", description="created on or after (YYYY-MM-DD)"),
        to: date | None = Query(default=None, description="created on or before (YYYY-MM-DD)"),
        speaker: str | None = Query(
            default=None,
            max_length=inputs.MAX_SPEAKER_NAME,
            description="only what this speaker said: a label (S1), the name the owner gave it or its voice's name",
        ),
        mode: Literal["words", "meaning", "both"] = Query(
            default="both",
            description="`words`: the words asked; `meaning`: passages that mean what is asked, in other words "
            "(English records); `both`: the two rankings fused",
        ),
    ):
        """The caller's segments (and titles, summaries, topics) that match `q`, best first; each
        hit names its record, its segment's `start` and `end`, `at` (when its first matched word
        was said; null for a title hit), a snippet with the matched words in `<mark>` and how it
        `matched` (`words`, `meaning`). By words, `total` counts up to 1,000 hits: when more
        match, it is 1000 with `total_capped` true, and the pages are the best of the first
        1,000 found; by meaning or both, the pages are the best 50 of each ranking, fused.
        `mode=meaning` answers 409 `meaning_unavailable` where it cannot run (the message says
        what enables it); `both` then answers by words, and says so in `notes`."""
        if len(q) > MAX_QUERY_CHARS:
            raise ApiError(422, "query_too_long", f"a query has at most {MAX_QUERY_CHARS} characters")
        for name, value in (("topic", topic), ("speaker", speaker)):
            if value is not None and inputs.text_problem(value):
                raise ApiError(422, f"bad_{name}", f"{name} {inputs.text_problem(value)}")
        filters = {"stage": stage.value if stage else None, "topic": topic, "speaker": speaker}
        try:
            found = find(store, who["id"], q, mode=mode, limit=limit, offset=offset, since=from_, until=to, **filters)
        except (QueryProblem, MeaningUnavailable) as problem:
            raise refusal(problem) from None
        items, (total, capped) = found.items, found.counted
        following = offset + len(items)
        next_page = None
        if following < total:
            dates = {"from": from_, "to": to}
            next_page = page_address("/search", q=q, limit=limit, offset=following, mode=mode, **filters, **dates)
        return {"items": items, "total": total, "total_capped": capped, "next": next_page, "notes": found.notes}

    return routes
