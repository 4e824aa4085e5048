"""Loaded into a `transcriber serve` process by tests/test_resumable_faults.py: the first time an
upload is about to become a record (its last byte committed, its bytes checked by intake), the
process kills itself (SIGKILL to its whole process group), the moment between "last byte" and
"record made". A marker file in CRASH_HOOK_DIR remembers that it did."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from db.resumable import ResumableUploads

_finish_upload = ResumableUploads.finish_upload


def _crashing_finish_upload(self, upload_id, owner_id, new, same=None):
    marker = Path(os.environ["CRASH_HOOK_DIR"]) / "crashed-finishing"
    if not marker.exists():
        marker.touch()
        os.killpg(os.getpgid(0), signal.SIGKILL)
    return _finish_upload(self, upload_id, owner_id, new, same)


ResumableUploads.finish_upload = _crashing_finish_upload
