"""Test fixtures: a real PostgreSQL, a fresh database per test, no mocks of the database.

The server is the one already listening on 127.0.0.1:5432 when there is one (this machine and
CI); otherwise an embedded server (pgserver) is started for the session in a short directory.
Migrations are applied once to a template database that every test's database is cloned from.
"""
from __future__ import annotations

import itertools
import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest
from pytest_postgresql import factories

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from db import Database, Store  # noqa: E402
from service import logs  # noqa: E402
from stand_ins import WordASecond  # noqa: E402

_embedded = {}


def _server_listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            pass
        with psycopg.connect(host=host, port=port, user="postgres", dbname="postgres", connect_timeout=3):
            return True
    except OSError:
        return False
    except psycopg.Error:
        return False


def listening(port: int, host: str = "127.0.0.1") -> bool:
    """Something accepts connections on host:port (a broker the tests may use)."""
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


def free_port() -> int:
    """A port nothing listens on now, for a process a test starts."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def recognizer_children(pid: int) -> list:
    """The recognizer processes (audio.recognizer_process) under the process `pid`."""
    import psutil

    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if "audio.recognizer_process" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def wait_until(predicate, seconds: float, every: float = 0.1, what: str = "the condition"):
    """`predicate()`'s first true value, asked every `every` seconds; fails after `seconds`,
    naming `what` it waited for."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}: not within {seconds}s"
        time.sleep(every)


@pytest.fixture
def hears_word_a_second(monkeypatch):
    """Makes what this process recognises WordASecond's, for a test whose subject is the pipeline
    around the words: `hears_word_a_second(pause=...)` puts it in place."""
    import actors.steps

    def use(pause: float = 0.0) -> None:
        recognizer = WordASecond(pause)
        monkeypatch.setattr(actors.steps, "engine", lambda _: recognizer)

    return use


def pytest_addoption(parser):
    parser.addoption("--faults", choices=("short", "long"), default="short",
                     help="fault-injection profile of tests/test_faults.py: short (CI) or long (by hand)")
    parser.addoption("--long", action="store_true",
                     help="also run the costly variants kept out of the default run for its CPU budget "
                          "(base on non-speech and on mfa_uhuh again, the quick start on a GENERIC CPU, the archive benchmark's smoke run, "
                          "transcribe --task translate)")


def needs_long(request, why: str) -> None:
    """Skip a costly variant unless the run asked for them with --long (the default suite keeps
    within its CPU budget; the cheaper variants of the same rule run by default)."""
    if not request.config.getoption("--long"):
        pytest.skip(f"{why}: run with --long")


def pytest_configure(config):
    option = config.option
    # a database name of this session's own: two test runs on one server never collide
    option.postgresql_dbname = option.postgresql_dbname or f"tests_{os.getpid()}"
    if getattr(option, "postgresql_host", None) and os.environ.get("TRANSCRIBER_TEST_PG") != "embedded":
        return
    if os.environ.get("TRANSCRIBER_TEST_PG") != "embedded" and _server_listening("127.0.0.1", 5432):
        option.postgresql_host, option.postgresql_port, option.postgresql_user = "127.0.0.1", 5432, "postgres"
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        directory = Path(tempfile.mkdtemp(prefix="trpg", dir="/tmp"))
        server = pgserver.get_server(directory / "d", cleanup_mode="delete")
    info = server.get_postmaster_info()
    _embedded.update(server=server, directory=directory)
    option.postgresql_host = str(info.socket_dir)
    option.postgresql_port = info.port
    option.postgresql_user = "postgres"


def pytest_unconfigure(config):
    if _embedded:
        _embedded["server"].cleanup()
        shutil.rmtree(_embedded["directory"], ignore_errors=True)


def conninfo(host, port, user, dbname, password=None) -> str:
    return psycopg.conninfo.make_conninfo(
        host=str(host), port=str(port), user=user, dbname=dbname, password=password or None
    )


def apply_migrations(host, port, user, dbname, password=None, **_):
    with Database(conninfo(host, port, user, dbname, password), max_size=1) as db:
        db.migrate()


postgresql_noproc = factories.postgresql_noproc(load=[apply_migrations])


@pytest.fixture
def postgresql(postgresql_noproc):
    """A connection to this test's own fresh database, a copy of the template the migrations were
    applied to once. Copied file by file (STRATEGY FILE_COPY, PostgreSQL 15 and later): for a
    database this small that costs the server about 0.2 CPU-s a test, created and dropped, where
    the default strategy, which writes every page to the WAL, costs 0.3, over some 500 tests."""
    from psycopg import sql

    server = postgresql_noproc
    name, template = sql.Identifier(server.dbname), sql.Identifier(server.template_dbname)
    admin = conninfo(server.host, server.port, server.user, getattr(server, "maintenance_dbname", "postgres"),
                     server.password)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))  # a killed run's
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(name, template))
    connection = psycopg.connect(conninfo(server.host, server.port, server.user, server.dbname, server.password))
    try:
        yield connection
    finally:
        connection.close()
        with psycopg.connect(admin, autocommit=True) as conn:  # the test's processes may still be connected
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(name))


@pytest.fixture(autouse=True)
def quiet_logs():
    logs.configure(level="WARNING")
    yield


@pytest.fixture
def database_url(postgresql) -> str:
    """The URL of this test's own fresh, migrated database."""
    info = postgresql.info
    return conninfo(info.host, info.port, info.user, info.dbname, info.password)


@pytest.fixture
def db(database_url):
    database = Database(database_url, max_size=12)
    yield database
    database.close()


@pytest.fixture
def own_server():
    """A PostgreSQL server of this test's own, on its own socket and port, that it may restart
    (never the shared one): its URL, and a function that restarts it."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
        from pgserver._commands import pg_ctl

    directory = Path(tempfile.mkdtemp(prefix="trsv", dir="/tmp"))
    server = pgserver.get_server(directory / "d", cleanup_mode="delete")

    def restart(while_down=None):
        """Restart the server; with `while_down`, stop it, call that, then start it again."""
        if while_down is None:
            pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=60)
            return
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user, timeout=60)
        try:
            while_down()
        finally:
            server.ensure_postgres_running()

    yield server.get_uri(), restart
    server.cleanup()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def store(db) -> Store:
    return Store(db)


@pytest.fixture
def owner(store) -> dict:
    store.add_owner("alice")
    return store.owner_by_name("alice")


def add_record(store: Store, owner: dict, payload: bytes = b"not really audio", title: str = "") -> int:
    """A record accepted at stage `created` (the bytes matter only to the audio steps)."""
    return store.accept(owner["id"], [payload], title=title, source_name="sample.bin")


_queue_numbers = itertools.count(1)
# The suite's recognizers decode with one thread each: the same text as with two (measured on the
# bundled sample and a LibriVox reading, tiny.en and base), for some 15 % less CPU than threads
# that wait on each other on two busy cores. They compute in int8 on every CPU: the pipeline's
# tests need words, not the best words, and on a CPU without VNNI, where the service's default is
# float32, int8 costs half its CPU (BENCHMARKS.md, "Per CPU kind"). What a user reads is tested
# with the default: the quick start runs without these, as a newcomer, and the guards' tests on
# real audio (test_invented_text) build their engines as the service does.
FRUGAL_RECOGNIZER = {"TRANSCRIBER_RECOGNIZER_THREADS": "1", "TRANSCRIBER_COMPUTE_TYPE": "int8"}


@pytest.fixture
def env(database_url, tmp_path) -> dict:
    """An environment for `transcriber` subprocesses pointed at this test's database, with a
    broker queue of this test's own: two runs of the suite on one machine (or two tests) that
    share its Redis or RabbitMQ never take each other's wake-ups."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TRANSCRIBER_")}
    environment.update(TRANSCRIBER_DATABASE_URL=database_url, TRANSCRIBER_HOME=str(tmp_path / "home"),
                       TRANSCRIBER_QUEUE=f"tests_{os.getpid()}_{next(_queue_numbers)}",
                       # speakers cost CPU on every done record: only the tests about them ask
                       TRANSCRIBER_DIARIZE="off", **FRUGAL_RECOGNIZER)
    environment["PYTHONPATH"] = str(ROOT) + os.pathsep + environment.get("PYTHONPATH", "")
    return environment


def policy(lease=60.0, time_limit=3600.0, max_attempts=3, backoff=10.0):
    from domain.policy import StepPolicy

    return StepPolicy(lease_seconds=lease, time_limit_seconds=time_limit, max_attempts=max_attempts,
                      backoff_seconds=backoff)


def save_result(store: Store, claim, fields: dict, diarize: bool = False, params: dict | None = None) -> bool:
    """A step's save as a worker makes it: the fields (and `params`, the rest its statement takes),
    and the next step queued (with `diarize`, the diarize step after done, unless the upload said off)."""
    wanted = (store.read_record(claim.record_id) or {}).get("speakers_wanted") != "off"
    return store.save(claim, fields, params, next_step=claim.step.next(speakers=diarize and wanted))


def checkpoint(store: Store, claim, start: float, end: float, segments: list[dict], language: str | None,
               lease: float, language_probability: float | None = None, suppressed: list[dict] | None = None,
               english: list[dict] | None = None) -> bool:
    """A recognised window saved as the recognize step saves it (`english`: its translation)."""
    kept = {"segments": segments, "language": language, "language_probability": language_probability,
            "suppressed": suppressed or [], "english": english}
    return store.checkpoint(claim, start, end, lease, kept, {"segments": len(segments)})


def save_turns(store: Store, claim, turns: list[dict]) -> bool:
    """The diarize step's save of `turns`, as the step saves its result."""
    from actors.diarizing import said_by

    said = said_by(store, claim.record_id, turns)
    return store.save(claim, {"turns": turns}, {"said": said, "speakers": []}, next_step=None)


def kinds(store: Store, record_id: int) -> list[str]:
    return [event["kind"] for event in store.events(record_id)]


def run_together(count: int, work):
    """Run `work(i)` in `count` threads released at once by a barrier; return their results."""
    import threading

    barrier = threading.Barrier(count)
    results: list = [None] * count
    errors: list = []

    def body(i):
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except BaseException as error:  # reported to the test below
            errors.append(error)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    if errors:
        raise errors[0]
    return results


def settings(**overrides):
    """Service settings as the environment would give them, with TRANSCRIBER_* overrides."""
    from service import config

    # speakers only where a test asks (they cost CPU); the suite's frugal recognizer (above)
    frugal = {name.removeprefix("TRANSCRIBER_").lower(): value for name, value in FRUGAL_RECOGNIZER.items()}
    overrides = {"diarize": "off", **frugal, **overrides}
    return config.load({f"TRANSCRIBER_{k.upper()}": str(v) for k, v in overrides.items()})


def work_until_idle(store, the_settings, limit=50):
    """Run steps the way workers do until neither step finds work; return the outcomes."""
    from actors.work import run_once
    from domain.claims import NO_WORK
    from domain.stages import Step

    outcomes = []
    for _ in range(limit):
        ran = [run_once(store, the_settings, step) for step in Step]
        outcomes += [o for o in ran if o is not NO_WORK]
        if all(o is NO_WORK for o in ran):
            return outcomes
    raise AssertionError("work did not run out")


def drop_queue(name: str, redis_url: str | None = None, amqp_url: str | None = None) -> None:
    """Remove what a test's queue left on the shared brokers (its keys in one Redis database,
    its queues in RabbitMQ), and nothing else."""
    if redis_url:
        import redis

        with redis.Redis.from_url(redis_url) as client:
            for key in client.scan_iter(f"dramatiq:*{name}*"):
                client.delete(key)
    if amqp_url:
        import pika

        with pika.BlockingConnection(pika.URLParameters(amqp_url)) as connection:
            channel = connection.channel()
            for queue in (name, f"{name}.DQ", f"{name}.XQ"):
                channel.queue_delete(queue)



@pytest.fixture(scope="session")
def vector_server(postgresql_noproc):
    """A PostgreSQL server with pgvector for the tests of search by meaning, one per session: the
    suite's own server when it offers the extension, else an embedded one (pgserver ships it),
    with a template database the migrations built once. Skipped without the `meaning` extra."""
    from audio import meaning

    if not meaning.extra_installed():
        pytest.skip("search by meaning needs the `meaning` extra")
    server = postgresql_noproc
    admin = conninfo(server.host, server.port, server.user, "postgres", server.password)
    with psycopg.connect(admin, autocommit=True) as conn:
        offered = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
    embedded = None
    if not offered:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            directory = Path(tempfile.mkdtemp(prefix="trpv", dir="/tmp"))
            embedded = pgserver.get_server(directory / "d", cleanup_mode="delete")
        info = embedded.get_postmaster_info()
        admin = conninfo(info.socket_dir, info.port, "postgres", "postgres")
    template = f"meaning_template_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{template}"')
    with Database(psycopg.conninfo.make_conninfo(admin, dbname=template), max_size=1) as db:
        db.migrate()
    yield admin, template
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
    if embedded is not None:
        embedded.cleanup()
        shutil.rmtree(directory, ignore_errors=True)


_vector_databases = itertools.count(1)


@pytest.fixture
def vector_url(vector_server) -> str:
    """The URL of this test's own fresh, migrated database on the pgvector server."""
    admin, template = vector_server
    name = f"meaning_{os.getpid()}_{next(_vector_databases)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    yield psycopg.conninfo.make_conninfo(admin, dbname=name)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def vector_store(vector_url) -> Store:
    database = Database(vector_url, max_size=12)
    yield Store(database)
    database.close()
