"""Test harness: a throwaway PostgreSQL with logical decoding, one local Spark session, an Airflow home.

Under ``CI=true`` a test whose real part cannot be started fails; elsewhere it is skipped with the
reason, so a laptop without Java can still run the pure tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from tests.support.kafka import kafka_broker, start_connect  # noqa: F401  (fixtures, tests/kafka)

ROOT = Path(__file__).resolve().parents[1]
TEST_PG_URL_ENV = "CDC_BACKFILL_TEST_PG_URL"
# The Spark jobs the tests start (a CLI command's or an Airflow task's spark-submit) each read a few
# hundred rows: with the JVM's first compiler only, a job starts sooner and takes about 40% less CPU
# (a trivial spark-submit: 6.8 s against 7.8-8.1 s, 7.1 CPU-s against 12.5). The shared session
# (``spark`` below) keeps the default: it runs every test's queries, where the full compiler pays back
# (tests/reconcile/spark/test_rules.py and test_formats.py: 156 s with the first compiler only, 136 s
# without). They replace the project's collector, so it is named again. A value the user set is kept.
TEST_JOB_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
_JOB_OPTIONS_SET_HERE: list[bool] = []  # one entry when pytest_configure set it (not the user)
_AIRFLOW_HOMES_MADE_HERE: list[str] = []  # removed when the run ends (116 of them had piled up in /tmp)


def pytest_configure(config: pytest.Config) -> None:
    # Airflow reads its configuration at import: the test Airflow home must be set before any test
    # module imports airflow. One fresh home per test run keeps runs independent of each other.
    if not os.environ.get("CDC_BACKFILL_TEST_KEEP_AIRFLOW_HOME"):
        os.environ["AIRFLOW_HOME"] = tempfile.mkdtemp(prefix="cdc-airflow-")
        _AIRFLOW_HOMES_MADE_HERE.append(os.environ["AIRFLOW_HOME"])
    os.environ.setdefault("CDC_BACKFILL_HOME", str(ROOT))
    from cdc_backfill.runtime import apply_defaults
    from cdc_backfill.spark.log4j import DRIVER_JAVA_OPTIONS_ENV

    apply_defaults(ROOT)
    if DRIVER_JAVA_OPTIONS_ENV not in os.environ:
        os.environ[DRIVER_JAVA_OPTIONS_ENV] = TEST_JOB_JAVA_OPTIONS
        _JOB_OPTIONS_SET_HERE.append(True)


def pytest_unconfigure(config: pytest.Config) -> None:
    for home in _AIRFLOW_HOMES_MADE_HERE:
        shutil.rmtree(home, ignore_errors=True)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unavailable(part: str, reason: object) -> NoReturn:
    """Fail under CI (a real part must run there), skip elsewhere."""
    msg = f"{part} could not be started: {reason}"
    if in_ci():
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


# ---------------------------------------------------------------- PostgreSQL


@dataclass(frozen=True)
class PgServer:
    url: str  # SQLAlchemy URL
    dsn: str  # libpq string, for psycopg2 and replication connections
    host: str
    port: int
    user: str
    database: str


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """An external server (``CDC_BACKFILL_TEST_PG_URL``) or an embedded one for the whole run."""
    external = os.environ.get(TEST_PG_URL_ENV)
    if external:
        from sqlalchemy.engine import make_url

        u = make_url(external)
        dsn = f"host={u.host} port={u.port or 5432} user={u.username} dbname={u.database}"
        if u.password:
            dsn += f" password={u.password}"
        yield PgServer(
            external, dsn, u.host or "127.0.0.1", u.port or 5432, u.username or "", u.database or ""
        )
        return
    from cdc_backfill.pg.embedded import EmbeddedPostgres

    # fsync off: tests kill clients, never the server, and this makes them faster. synchronous_commit
    # stays on: logical decoding only reads WAL that is flushed, so with it off a commit can be missing
    # from a decode that runs right after it (seen here: an empty pgoutput read).
    server = EmbeddedPostgres(settings={"fsync": "off", "full_page_writes": "off"})
    try:
        server.start()
    except Exception as exc:
        unavailable("PostgreSQL", exc)
    try:
        yield PgServer(server.url, server.dsn, "127.0.0.1", server.port, server.user, server.database)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pg_url(pg_server: PgServer) -> str:
    return pg_server.url


@pytest.fixture
def fresh_db(pg_server: PgServer) -> Iterator[str]:
    """A new empty database on the test server for one test; dropped afterwards. Returns its URL."""
    yield from _new_database(pg_server)


@pytest.fixture
def other_db(pg_server: PgServer) -> Iterator[str]:
    """A second new database on the same server, for a test that needs two sources."""
    yield from _new_database(pg_server)


def _new_database(pg_server: PgServer) -> Iterator[str]:
    import uuid

    import sqlalchemy as sa

    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(pg_server.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = pg_server.url.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        _drop_database(admin, name)
        admin.dispose()


def _drop_database(admin, name: str) -> None:  # type: ignore[no-untyped-def]
    """Drop a test database and its replication slots. A slot's walsender can outlive the client that
    stopped a moment ago (Debezium's JVM closes its connection asynchronously), and PostgreSQL refuses
    to drop a database with an active slot, which would then stay and block the next test's slot of the
    same name: end those walsenders first, for at most 30 s."""
    import time

    import sqlalchemy as sa

    active = sa.text(
        "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = :d AND active"
    )
    give_up = time.monotonic() + 30
    with admin.connect() as conn:
        while conn.execute(active, {"d": name}).all() and time.monotonic() < give_up:
            time.sleep(0.2)
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


# ---------------------------------------------------------------- Spark


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local Spark session shared by every test of the run."""
    try:
        from cdc_backfill.spark.session import build_session

        with _without_job_java_options(), _packages_lock():
            session = build_session("cdc_backfill_tests", master="local[2]", conf=_session_jars())
    except Exception as exc:
        unavailable("Spark", exc)
    yield session
    session.stop()


@pytest.fixture(scope="session", autouse=True)
def _shared_session_first(request):  # type: ignore[no-untyped-def]
    """When the run selected a test that uses Spark, the shared session starts before the first test.
    A process has one JVM, whose class path is fixed when it starts: a command run in the process that
    built a session first (``verify`` in-process) would leave the shared one without the S3 connector,
    and a later S3 test failing with ``S3AFileSystem not found`` only in some orders of the tests."""
    if any(
        "spark" in item.fixturenames or item.get_closest_marker("spark") for item in request.session.items
    ):
        try:
            request.getfixturevalue("spark")
        except (pytest.skip.Exception, pytest.fail.Exception):
            pass  # the tests that use it are told, each; the others run


@contextmanager
def _without_job_java_options() -> Iterator[None]:
    """The environment without the jobs' JVM setting (TEST_JOB_JAVA_OPTIONS), while the shared session's
    JVM starts: also out of SPARK_SUBMIT_OPTS, which an Airflow task run in this process sets from it.
    Options the user set are left as they are."""
    from cdc_backfill.spark.log4j import DRIVER_JAVA_OPTIONS_ENV

    if not _JOB_OPTIONS_SET_HERE:
        yield
        return
    saved = {name: os.environ.get(name) for name in (DRIVER_JAVA_OPTIONS_ENV, "SPARK_SUBMIT_OPTS")}
    for name, value in saved.items():
        if value and TEST_JOB_JAVA_OPTIONS in value:
            os.environ[name] = value.replace(TEST_JOB_JAVA_OPTIONS, "").strip()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is not None:
                os.environ[name] = value


@contextmanager
def _packages_lock() -> Iterator[None]:
    """One session start at a time on the machine: ``make test``'s two pytest processes start theirs at
    once, and on a fresh machine both would fetch the Kafka source into Ivy's cache together."""
    import fcntl

    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cdc_backfill"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".spark-packages.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def _session_jars() -> dict[str, str]:
    """The shared session's connectors, which only a JVM's start can add, by their Maven coordinates as
    a user's Spark fetches them: Spark's Kafka source (``capture kafka`` run in-process by the Kafka
    torture test) and the s3a connector the product asks for where a lake is on S3."""
    from cdc_backfill.spark.packages import job_packages

    return job_packages(["s3://any"], kafka=True).conf()


@pytest.fixture
def s3_spark(spark, s3_env):  # type: ignore[no-untyped-def]
    """The shared session reaching the test's S3 server: the settings a session built now would get
    (``cdc_backfill.storage.spark_conf``), set on its Hadoop configuration; a spark-submit the test
    starts reaches it too (the AWS settings are in the environment, the connector on its command line)."""
    from cdc_backfill.storage import spark_conf

    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in spark_conf(s3_env).items():
        hadoop.set(key.removeprefix("spark.hadoop."), value)
    return spark


@pytest.fixture
def lake(request, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Where a test's landing and state go: ``tmp_path`` (local), or a bucket on the S3 server when
    parametrized ``indirect`` with "s3" (the shared session then reaches it too, if the test uses it)."""
    if getattr(request, "param", "local") == "s3":
        if "spark" in request.fixturenames:  # only a test that runs Spark needs its connector
            request.getfixturevalue("s3_spark")
        return request.getfixturevalue("s3_lake")
    return tmp_path


@pytest.fixture
def s3_lake(s3_server, s3_env):  # type: ignore[no-untyped-def]
    """A bucket of the test's own on the S3 server, as the path of the lake in it."""
    from cdc_backfill.lakepath import S3Path

    return S3Path(s3_server.new_bucket(), "lake")


@pytest.fixture(autouse=True)
def _release_spark_cache(request):  # type: ignore[no-untyped-def]
    """Tests share one session: what a test cached must not fill the driver's memory for the next."""
    yield
    if "spark" in request.fixturenames:
        session = request.getfixturevalue("spark")
        session.catalog.clearCache()
        # local checkpoints (the reconcile job's parsed events) are persisted RDDs, not cached tables
        for rdd in session.sparkContext._jsc.getPersistentRDDs().values():
            rdd.unpersist(False)


# ---------------------------------------------------------------- Airflow


@pytest.fixture(scope="session")
def airflow_db() -> str:
    """The test Airflow home with its metadata database migrated; returns AIRFLOW_HOME."""
    res = subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"], capture_output=True, text=True, timeout=600
    )
    if res.returncode != 0:
        unavailable("Airflow", (res.stderr or res.stdout).strip().splitlines()[-1:])
    return os.environ["AIRFLOW_HOME"]


@pytest.fixture(scope="module")
def icu_server():  # type: ignore[no-untyped-def]
    """A server whose build has ICU collations (the Debian PostgreSQL binaries; the embedded one has none)."""
    import glob

    from cdc_backfill.pg.embedded import EmbeddedPostgres

    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not bins:
        unavailable("PostgreSQL with ICU", "no /usr/lib/postgresql/*/bin on this machine")
    server = EmbeddedPostgres(bin_dir=Path(bins[-1]), settings={"fsync": "off"})
    try:
        server.start()
    except Exception as exc:
        unavailable("PostgreSQL with ICU", exc)
    yield server
    server.stop()


# ---------------------------------------------------------------- S3 (moto's server, a real process)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):  # type: ignore[no-untyped-def]
    from tests.support.s3 import S3Server

    server = S3Server(tmp_path_factory.mktemp("s3") / "moto.log")
    try:
        server.start()
    except (OSError, RuntimeError) as exc:
        unavailable("moto's S3 server", exc)
    yield server
    server.stop()


@pytest.fixture
def s3_env(s3_server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The AWS settings that reach the test's S3 server, set in this process's environment."""
    for key, value in s3_server.env.items():
        monkeypatch.setenv(key, value)
    return s3_server.env
