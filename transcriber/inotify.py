"""A small binding of Linux's inotify through ctypes: the watched folder hears a file written,
moved in or closed the moment it happens, instead of finding it at its next scan of the whole
folder (`transcriber.folder`). Where the C library has no inotify (not Linux), or the kernel
refuses one more instance or watch, `Inotify()` or `add` raises OSError and the folder is polled.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
from dataclasses import dataclass

# the event bits of <sys/inotify.h>
IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
_NONBLOCK, _CLOEXEC = os.O_NONBLOCK, getattr(os, "O_CLOEXEC", 0o2000000)

# what a watched folder asks to hear of itself and of each entry in it
FOLDER_EVENTS = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)

_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name
_READ_BYTES = 1 << 16


@dataclass(frozen=True)
class Event:
    watch: int  # the descriptor `add` returned; -1 with IN_Q_OVERFLOW
    mask: int
    name: str  # the entry's name inside the watched folder, "" for the folder itself


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        raise OSError("this C library has no inotify")
    libc.inotify_init1.argtypes = [ctypes.c_int]
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc


class Inotify:
    """One inotify instance: its watches, and the events read from it."""

    def __init__(self) -> None:
        self._libc = _libc()
        fd = self._libc.inotify_init1(_NONBLOCK | _CLOEXEC)
        if fd < 0:
            raise _os_error("inotify_init1")
        self.fd: int = fd

    def add(self, path: str, mask: int = FOLDER_EVENTS) -> int:
        """Watch the folder at `path`; its watch descriptor (the same one for a folder watched
        twice). OSError when it is gone, unreadable, or the kernel's limit of watches is reached."""
        watch: int = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if watch < 0:
            raise _os_error(f"inotify_add_watch {path}")
        return watch

    def remove(self, watch: int) -> None:
        self._libc.inotify_rm_watch(self.fd, watch)  # a watch the kernel dropped already: no matter

    def read(self, timeout: float) -> list[Event]:
        """The events that arrive within `timeout` seconds (all those waiting, once one has)."""
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        if not poller.poll(max(0, int(timeout * 1000))):
            return []
        events: list[Event] = []
        while True:
            try:
                data = os.read(self.fd, _READ_BYTES)
            except BlockingIOError:
                return events
            offset = 0
            while offset + _HEADER.size <= len(data):
                watch, mask, _cookie, length = _HEADER.unpack_from(data, offset)
                start = offset + _HEADER.size
                name = data[start : start + length].rstrip(b"\0")
                events.append(Event(watch, mask, os.fsdecode(name)))
                offset = start + length

    def close(self) -> None:
        os.close(self.fd)


def _os_error(what: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, f"{what}: {os.strerror(number)}")
