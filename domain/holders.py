"""Who holds a claim: a process, named so that another process can tell when it has died.

A claim's lease bounds how long a dead holder keeps its record. But a `transcriber transcribe`
killed outright and run again on the same machine should neither wait the lease out (five
minutes for recognition) nor start its file over: the rerun can see that the holder was a
process of this machine that no longer exists. The name says which machine (host name, boot
and process-id namespace), which process, and when that process started (a process id is reused; its start time
tells the two apart). Only a holder of this machine and this boot is ever judged; any other is
taken to be alive until its lease runs out.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

_named: dict[int, str] = {}  # by process id: a forked worker names itself anew


def _boot() -> str:
    """This boot, and the process-id namespace within it: a process id means something only
    there (two containers sharing the host's name would otherwise read each other's ids)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid").removeprefix("pid:[").removesuffix("]")
    except OSError:  # not Linux: no holder is ever judged gone
        return ""
    return f"{boot}.{namespace}"


def process(pid: int) -> tuple[bool, str] | None:
    """Whether the process `pid` has ended though its entry remains (a zombie: a killed process
    with several threads shows as one until the last of them is gone), and when it started
    (clock ticks after boot); None when there is no such process, or no /proc to tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()
    except OSError:
        return None
    return fields[0] in (b"Z", b"X"), fields[19].decode()  # fields 3 and 22 of proc(5)


def this_process() -> str:
    """This process's name as a claim's holder."""
    pid = os.getpid()
    if pid not in _named:
        found = process(pid)
        _named[pid] = "/".join([socket.gethostname(), _boot(), str(pid), found[1] if found else ""])
    return _named[pid]


def this_machine() -> str | None:
    """The start that every holder name of this machine and boot shares; None where holders
    cannot be judged (no boot id)."""
    boot = _boot()
    return f"{socket.gethostname()}/{boot}/" if boot else None


def gone(holder: str | None) -> bool:
    """Whether `holder` is known to have ended: a process of this machine and boot that no
    longer runs (no such process, another process under its id, or a zombie). Unknown or
    elsewhere: not gone."""
    if not holder:
        return False
    host, boot, pid, started = [*holder.split("/"), "", "", "", ""][:4]
    if not (boot and started and pid.isdigit()) or host != socket.gethostname() or boot != _boot():
        return False
    found = process(int(pid))
    return found is None or found[0] or found[1] != started
