"""The database side: SQL (named queries and numbered migrations), the pool, the store."""
from db.database import Database, DatabaseUnavailable
from db.store import Store

__all__ = ["Database", "DatabaseUnavailable", "Store"]
