"""The database side: SQL (named queries in `queries/`, numbered migrations in `migrations/`),
the pool, and the `Store` every layer above talks to (one part per concern, see `db.store`)."""

from db.database import Database, DatabaseUnavailable
from db.store import Store

__all__ = ["Database", "DatabaseUnavailable", "Store"]
