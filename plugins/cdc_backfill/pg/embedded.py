"""A private PostgreSQL server with logical decoding on, started and stopped by the project.

The binaries come from the ``pgserver`` package (PostgreSQL 16) unless ``CDC_BACKFILL_PG_BIN`` names
another ``bin`` folder (for example ``/usr/lib/postgresql/15/bin``). The server listens on 127.0.0.1 on a
free port, so every client (psycopg2, SQLAlchemy, replication connections, Airflow connections) reaches
it by an ordinary URL.

``initdb`` and ``postgres`` refuse to run as root; as root the server runs as an unprivileged system
user (``postgres`` if it exists, else one created for it), which must be able to reach the binaries
and own the data folder.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import logging
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

log = logging.getLogger(__name__)

PG_BIN_ENV = "CDC_BACKFILL_PG_BIN"
FALLBACK_USER = "cdcbackfill"

# Logical decoding needs wal_level=logical (a restart-only setting, so it is given at start) and room
# for the slots and senders of a capture plus tests running side by side.
LOGICAL_SETTINGS: dict[str, str] = {
    "wal_level": "logical",
    "max_replication_slots": "20",
    "max_wal_senders": "20",
    "max_connections": "100",
}


class EmbeddedPostgresError(RuntimeError):
    """The embedded server could not be set up or started; the message carries the server's log tail."""


def pgserver_bin_dir() -> Path | None:
    """The ``bin`` folder shipped inside the pgserver package, found without importing it."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return path if (path / "pg_ctl").exists() else None


def default_bin_dir() -> Path:
    env = os.environ.get(PG_BIN_ENV)
    if env:
        return Path(env)
    found = pgserver_bin_dir()
    if found is None:
        raise EmbeddedPostgresError(
            f"no PostgreSQL binaries: install the pgserver package (make venv) or set {PG_BIN_ENV} "
            "to a folder holding initdb, pg_ctl and postgres"
        )
    return found


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def server_options(port: int, socket_dir: Path, settings: dict[str, str]) -> list[str]:
    """The ``-c name=value`` options given to ``postgres`` through ``pg_ctl -o``."""
    merged = {
        "listen_addresses": "127.0.0.1",
        "port": str(port),
        "unix_socket_directories": str(socket_dir),
        **LOGICAL_SETTINGS,
        **settings,
    }
    return [f"-c {name}={value}" for name, value in merged.items()]


def _run_as_user() -> str | None:
    """The system user to run the server as: None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", FALLBACK_USER):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    subprocess.run(
        ["useradd", "--system", "--no-create-home", FALLBACK_USER], check=True, capture_output=True
    )
    return FALLBACK_USER


def _make_traversable(path: Path) -> None:
    """Let other users traverse every parent of ``path`` (adds o+x only; root only).

    A virtual environment or temporary folder under a private parent is otherwise out of reach of the
    unprivileged server user.
    """
    for parent in reversed(path.parents):
        mode = parent.stat().st_mode
        if not mode & stat.S_IXOTH:
            parent.chmod(mode | stat.S_IXOTH)


def _make_readable_tree(path: Path) -> None:
    """``path`` and everything under it readable by others, executables executable (o+rX)."""
    _make_traversable(path)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in [dirpath, *(os.path.join(dirpath, f) for f in filenames + dirnames)]:
            st = os.lstat(name)
            if stat.S_ISLNK(st.st_mode):
                continue
            want = st.st_mode | stat.S_IROTH | (stat.S_IXOTH if st.st_mode & stat.S_IXUSR else 0)
            if want != st.st_mode:
                os.chmod(name, want)


class EmbeddedPostgres:
    """A throwaway (or kept) PostgreSQL server with logical decoding.

    ``with EmbeddedPostgres() as pg: pg.url`` starts it in a temporary folder and removes it after;
    give ``data_dir`` to keep the data between runs (the demo does).
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        bin_dir: Path | None = None,
        port: int | None = None,
        settings: dict[str, str] | None = None,
        database: str = "postgres",
    ) -> None:
        self.bin_dir = bin_dir or default_bin_dir()
        self._own_dir = data_dir is None
        # absolute: the server's programs run from "/" (and maybe as another user), so a relative
        # folder such as the demo's ".cdc/demo/postgres" would point somewhere else for them
        self.base_dir = (Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="cdc-pg-"))).resolve()
        self.data_dir = self.base_dir / "data"
        self.socket_dir = self.base_dir / "sock"
        self.log_file = self.base_dir / "server.log"
        self.port = port or free_port()
        self.settings = settings or {}
        self.database = database
        self.user = "postgres"  # the database role, not the system user
        self.system_user = _run_as_user()
        self.started = False

    # ------------------------------------------------------------ URLs

    @property
    def url(self) -> str:
        """SQLAlchemy URL of the server's database."""
        return f"postgresql+psycopg2://{self.user}@127.0.0.1:{self.port}/{self.database}"

    @property
    def dsn(self) -> str:
        """libpq connection string, for psycopg2 and replication connections."""
        return f"host=127.0.0.1 port={self.port} user={self.user} dbname={self.database}"

    # ------------------------------------------------------------ lifecycle

    def _run(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, object] = {}
        if self.system_user is not None:
            # group and extra_groups too: with root's gid kept, root-owned 0700 parents deny the
            # server user through their group bits even where "other" may traverse.
            entry = pwd.getpwnam(self.system_user)
            kwargs.update(user=entry.pw_uid, group=entry.pw_gid, extra_groups=[])
        env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        return subprocess.run(
            args, capture_output=True, text=True, timeout=timeout, check=False, env=env, cwd="/", **kwargs
        )

    def _prepare_dirs(self) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if self.system_user is not None:
            _make_readable_tree(self.bin_dir.parent)
            _make_traversable(self.base_dir)
            entry = pwd.getpwnam(self.system_user)
            for path in (self.base_dir, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
            # The whole data folder: a kept one may have been written under another user before.
            for dirpath, _dirs, files in os.walk(self.data_dir):
                os.chown(dirpath, entry.pw_uid, entry.pw_gid)
                for f in files:
                    os.chown(os.path.join(dirpath, f), entry.pw_uid, entry.pw_gid)

    def _initdb(self) -> None:
        log.debug("initdb %s", self.data_dir)
        res = self._run(
            [
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                self.user,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
            ]
        )
        if res.returncode != 0:
            raise EmbeddedPostgresError(
                f"initdb failed ({res.returncode}): {res.stderr.strip() or res.stdout}"
            )
        # In the folder's own configuration too: a kept server started again by hand (pg_ctl start)
        # still decodes logically; the settings given at start() win over these.
        with open(self.data_dir / "postgresql.conf", "a", encoding="utf-8") as fh:
            fh.write("\n# cdc_backfill: logical decoding\n")
            fh.writelines(f"{k} = {v}\n" for k, v in LOGICAL_SETTINGS.items())

    def start(self) -> EmbeddedPostgres:
        if self.started:
            return self
        t0 = time.monotonic()
        self._prepare_dirs()
        if not (self.data_dir / "PG_VERSION").exists():
            self._initdb()
        opts = " ".join(server_options(self.port, self.socket_dir, self.settings))
        res = self._run(
            [
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log_file),
                "-o",
                opts,
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        if res.returncode != 0:
            raise EmbeddedPostgresError(
                f"pg_ctl start failed ({res.returncode}): {res.stderr.strip()}\n--- server log ---\n{self.log_tail()}"
            )
        self.started = True
        atexit.register(self.stop)
        log.debug("embedded PostgreSQL on 127.0.0.1:%s started in %.1fs", self.port, time.monotonic() - t0)
        return self

    def detach(self) -> None:
        """Leave the server running after this process ends (``demo --keep``); :meth:`stop_kept` stops it."""
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        self.started = False

    @classmethod
    def stop_kept(cls, data_dir: Path) -> bool:
        """Stop a server left running in ``data_dir``; False when none runs there."""
        pg = cls(data_dir)
        if not (pg.data_dir / "postmaster.pid").exists():
            return False
        pg.started = True
        pg.stop(remove=False)
        return True

    def stop(self, remove: bool | None = None) -> None:
        """Stop the server (fast shutdown); remove its folder if we created it (or ``remove=True``)."""
        if self.started:
            res = self._run(
                [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"],
                timeout=60,
            )
            if res.returncode != 0:
                log.warning("pg_ctl stop failed: %s", res.stderr.strip())
            self.started = False
            with contextlib.suppress(Exception):
                atexit.unregister(self.stop)
        if remove if remove is not None else self._own_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def __enter__(self) -> EmbeddedPostgres:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
