"""The store: the one object the rest of the service talks to the database through.

It is composed of one part per concern, each a thin layer over named queries: the pipeline's
claim and writes (`db.pipeline`), intake, edits and deletion of records (`db.records`), owner
and operator accounts (`db.accounts`), browser sessions (`db.sessions`), audio blobs (`db.blobs`) and the read side (`db.reads`).
No part builds SQL from user input.
"""
from __future__ import annotations

from db.accounts import Accounts
from db.blobs import Blobs
from db.database import Database
from db.pipeline import Pipeline
from db.reads import Reads
from db.records import Records
from db.sessions import SessionRows


class Store(Pipeline, Records, Accounts, Blobs, Reads, SessionRows):
    def __init__(self, db: Database):
        self.db = db
