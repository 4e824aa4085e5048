"""The broker from TRANSCRIBER_BROKER_URL. It only carries "try to claim" wake-ups: PostgreSQL
holds all state, so a lost or duplicated message never loses or doubles work."""

from __future__ import annotations

import contextlib
import logging
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import dramatiq
from dramatiq.brokers.stub import StubBroker

from domain.errors import TranscriberError
from domain.redact import redact_url

CONNECT_TIMEOUT_SECONDS = 5
# the longest an idle Redis consumer sleeps between polls: the worst delay of a wake-up
REDIS_POLL_MS = 50


class BrokerUnavailable(TranscriberError, code="broker_unavailable"):
    pass


@contextlib.contextmanager
def _quiet(library: str):
    """Silence a library's own log while we try it: its failure becomes our one line, not a
    traceback printed by whatever logging the process set up (`dramatiq actors` sets some)."""
    log = logging.getLogger(library)
    before = log.level
    log.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        log.setLevel(before)


def describe(error: BaseException) -> str:
    """`Type: reason` in one line, also for exceptions whose text is empty (pika's)."""
    reason = str(error) or "; ".join(str(arg) or repr(arg) for arg in error.args) or "no reason given"
    return f"{type(error).__name__}: {' '.join(reason.split())}"


def make_broker(url: str | None) -> dramatiq.Broker:
    """A broker for `url` (redis:// or amqp://), not yet connected; without a URL, the
    in-process broker for a single process. `connect` checks it is reachable."""
    if url is None:
        return StubBroker()
    scheme = urlsplit(url).scheme
    if scheme in ("redis", "rediss"):
        from dramatiq.brokers.redis import RedisBroker

        class PromptRedisBroker(RedisBroker):
            """An idle Redis consumer polls with a pause that grows up to the worker's timeout
            (a second by default), so a wake-up could wait that long; here the pause stops
            growing at REDIS_POLL_MS (idle polling costs Redis commands, not transactions)."""

            def consume(self, queue_name, prefetch=1, timeout=5000):
                return super().consume(queue_name, prefetch, min(timeout, REDIS_POLL_MS))

        return PromptRedisBroker(url=url, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS, socket_timeout=30)
    if scheme in ("amqp", "amqps"):
        from dramatiq.brokers.rabbitmq import RabbitmqBroker

        parts = urlsplit(url)
        query = {
            "connection_attempts": "1",
            "stack_timeout": str(CONNECT_TIMEOUT_SECONDS),
            "socket_timeout": str(CONNECT_TIMEOUT_SECONDS),
            **dict(parse_qsl(parts.query)),
        }
        return RabbitmqBroker(url=urlunsplit(parts._replace(query=urlencode(query))))
    raise BrokerUnavailable(f"unsupported broker URL scheme {scheme!r}")


def connect(broker: dramatiq.Broker, url: str | None) -> None:
    """Check, within a bounded wait, that the broker made for `url` answers; BrokerUnavailable
    with one line naming it (without its password) otherwise."""
    if url is None:
        return
    scheme = urlsplit(url).scheme
    try:
        if scheme in ("redis", "rediss"):
            from dramatiq.brokers.redis import RedisBroker

            if not isinstance(broker, RedisBroker):
                raise TypeError(f"a {scheme} URL needs a Redis broker, not {type(broker).__name__}")
            broker.client.ping()
        else:
            from dramatiq.brokers.rabbitmq import RabbitmqBroker

            if not isinstance(broker, RabbitmqBroker):
                raise TypeError(f"a {scheme} URL needs a RabbitMQ broker, not {type(broker).__name__}")
            with _quiet("pika"):
                if not broker.connection.is_open:  # opens it now, within the bounded wait
                    raise ConnectionError("connection did not open")
    except Exception as error:  # noqa: BLE001 - whatever the broker's client raises, it is unreachable
        raise BrokerUnavailable(f"broker unreachable at {redact_url(url)}: {describe(error)}") from None
