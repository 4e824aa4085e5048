"""The store: the one object the rest of the service talks to the database through.

It is composed of one part per concern, each a thin layer over named queries: the pipeline's
claim and writes (`db.pipeline`), intake, edits and deletion of records (`db.records`), the
owner's corrections of the text (`db.corrections`), owner and operator accounts
(`db.accounts`), browser sessions (`db.sessions`), audio blobs (`db.blobs`), the read side
(`db.reads`), the owner's search by words (`db.search`) and by meaning (`db.meaning`), repeated
uploads (`db.uploads`), resumable uploads (`db.resumable`), the diarize step's reads and speaker
names (`db.speakers`), the owner's voices (`db.voices`), the watched folder's files
(`db.watched`), and quotas and audio retention (`db.quotas`). No part builds SQL from user input.
"""

from __future__ import annotations

from db.accounts import Accounts
from db.blobs import Blobs
from db.corrections import Corrections
from db.database import Database
from db.meaning import Meaning
from db.pipeline import Pipeline
from db.quotas import Quotas
from db.reads import Reads
from db.records import Records
from db.resumable import ResumableUploads
from db.search import Search
from db.sessions import SessionRows
from db.speakers import Speakers
from db.uploads import UploadKeys
from db.voices import Voices
from db.watched import WatchedFiles


class Store(
    Pipeline,
    Records,
    Corrections,
    UploadKeys,
    ResumableUploads,
    Accounts,
    Blobs,
    Reads,
    Search,
    Meaning,
    Quotas,
    SessionRows,
    Speakers,
    Voices,
    WatchedFiles,
):
    def __init__(self, db: Database):
        self.db = db
