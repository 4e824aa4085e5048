"""A TCP relay a test puts in front of a server it must not touch (the shared PostgreSQL,
RabbitMQ): passing, hung (accepts and never answers) or closed (connections dropped, port shut),
or resetting (every connection, open or new, answered with a TCP reset until it passes again)."""
from __future__ import annotations

import select
import socket
import struct
import threading


class Relay:
    """A TCP relay to `upstream` that can pass, hang or close. An upstream host that is a folder
    is a PostgreSQL server's socket folder (the embedded server of a machine with none running):
    its socket for that port is used."""

    def __init__(self, upstream: tuple[str, int], port: int = 0):
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", port))
        self.port = self.listener.getsockname()[1]
        self.passing = threading.Event()
        self.passing.set()
        self.resetting = False
        self.closed = False
        # cut: the next connection that carries `cut_after` bytes from its client is closed
        # right after passing that many (once); every byte clients sent is counted
        self.cut_after: int | None = None
        self.cuts = 0
        self.client_bytes = 0
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.sockets.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket):
        if self.resetting:
            _reset(client)
            return
        self.passing.wait()  # while hung, a new connection is accepted and never answered
        if self.closed:
            return
        server = _connect(*self.upstream)
        with self.lock:
            self.sockets.append(server)
        peers = {client: server, server: client}
        carried = 0
        try:
            while not self.closed:
                if not self.passing.is_set():
                    # hung: bytes stay unread, nobody gets an answer; waited out here, as a
                    # select on sockets with unread bytes would return at once, spinning a core
                    self.passing.wait(0.1)
                    continue
                ready, _, _ = select.select(list(peers), [], [], 0.1)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        cut = self._cut(carried, data)
                        carried += len(data)
                        if cut is not None:
                            server.sendall(cut)
                            self.client_bytes += len(cut)
                            return
                        self.client_bytes += len(data)
                    peers[sock].sendall(data)
        except (OSError, ValueError):  # ValueError: a socket reset (closed) meanwhile
            return
        finally:
            client.close()
            server.close()

    def _cut(self, carried: int, data: bytes) -> bytes | None:
        """The part of `data` to pass before cutting this connection, or None to pass it all."""
        with self.lock:
            if self.cut_after is None or carried + len(data) < self.cut_after:
                return None
            passed, self.cut_after = data[: self.cut_after - carried], None
            self.cuts += 1
            return passed

    def hang(self):
        self.passing.clear()

    def reset(self):
        """Every connection open now is reset (RST, as a peer that lost its state answers), and so
        is every new one until `resume`."""
        self.resetting = True
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for sock in sockets:
            _reset(sock)

    def resume(self):
        self.resetting = False
        self.passing.set()

    def close(self):
        self.closed = True
        self.passing.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread: the port closes now
        except OSError:
            pass
        self.listener.close()
        self.drop_connections(close=True)

    def drop_connections(self, *, close: bool = False):
        with self.lock:
            for sock in self.sockets:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                if close:
                    sock.close()


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset instead of the orderly end: lingering for 0 seconds drops what is
    unsent and sends RST."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    except OSError:
        pass


def _connect(host: str, port: int) -> socket.socket:
    if not host.startswith("/"):
        return socket.create_connection((host, port))
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.connect(f"{host}/.s.PGSQL.{port}")
    return server
