"""One page of a list the API answers: its items, the total, where it starts, and the address of
the next page (None on the last)."""

from datetime import date
from typing import Any
from urllib.parse import urlencode


def page(items: list[Any], total: int, limit: int, offset: int, path: str, **params: Any) -> dict[str, Any]:
    """The page of `items` read at `offset`; `params` are the list's other query parameters."""
    following = offset + len(items)
    later = page_address(path, **params, limit=limit, offset=following) if following < total else None
    return {"items": items, "total": total, "limit": limit, "offset": offset, "next": later}


def page_address(path: str, **params: Any) -> str:
    """`path` with the parameters that are set, encoded as a query string."""
    shown = {k: (v.isoformat() if isinstance(v, date) else v) for k, v in params.items() if v is not None}
    return f"{path}?{urlencode(shown)}"
