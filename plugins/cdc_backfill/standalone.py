"""``make airflow`` / ``cdc-backfill airflow``: Airflow for this checkout, started the right way.

``airflow standalone`` on its own would read ``$AIRFLOW_HOME/dags`` with Airflow's example DAGs, look
``airflow`` up on PATH for its parts, and generate a password somewhere in its output. This starts it
with this checkout's ``dags/`` and ``plugins/``, no examples, its own home (``.airflow``), the venv's
``bin`` first on PATH, the Spark connection and (when one is configured) the source connection wired
from the project's settings, and a login it prints. Airflow's own output goes to a log file; the
terminal shows where the UI is and how to log in. Builds its environment in pure functions.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from cdc_backfill.config import SourceSetting, resolve_source

log = logging.getLogger(__name__)

USER = "admin"
SOURCE_CONN_ID = "cdc_source"
PASSWORDS_FILE = "simple_auth_manager_passwords.json"
LOG_FILE = "standalone.log"


def airflow_connection(url: str) -> str:
    """An Airflow connection in its JSON form for a SQLAlchemy URL (pure)."""
    from sqlalchemy.engine import make_url

    u = make_url(url)
    kinds = {"postgresql": "postgres", "mssql": "mssql", "oracle": "oracle", "mysql": "mysql"}
    conn: dict[str, object] = {"conn_type": kinds.get(u.get_backend_name(), u.get_backend_name())}
    for field, value in (("host", u.host), ("port", u.port), ("login", u.username),
                         ("password", u.password), ("schema", u.database)):  # fmt: skip
        if value not in (None, ""):
            conn[field] = value
    return json.dumps(conn)


def airflow_environ(
    root: Path,
    home: Path,
    port: int,
    host: str,
    source: SourceSetting | None,
    environ: Mapping[str, str],
) -> dict[str, str]:
    """The environment ``airflow standalone`` runs in (pure): the project's settings under what the
    user has set, which always wins."""
    bin_dir = str(Path(sys.executable).parent)
    ours = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(root / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(root / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        # two cores: more parallel task processes only queue for the CPU
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{USER}:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / PASSWORDS_FILE),
        "AIRFLOW__API__HOST": host,
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://{_client_host(host)}:{port}/execution/",
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[*]"}),
        "PYSPARK_PYTHON": sys.executable,
    }
    if source is not None:
        ours[f"AIRFLOW_CONN_{SOURCE_CONN_ID.upper()}"] = airflow_connection(source.url)
    env = {**ours, **{k: v for k, v in environ.items() if v}}
    # standalone starts its parts by looking `airflow` up on PATH: this venv's, first
    if bin_dir not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    return env


def _client_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "") else host


def ensure_password(path: Path) -> str:
    """The admin password, generated once and kept in Airflow's passwords file."""
    if path.exists():
        try:
            current = json.loads(path.read_text()).get(USER)
        except ValueError:
            current = None
        if current:
            return str(current)
    password = secrets.token_urlsafe(12)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({USER: password}))
    path.chmod(0o600)
    return password


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/version", timeout=5) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def run_standalone(root: Path, port: int = 8080, host: str = "127.0.0.1", verbose: bool = False) -> int:
    """Start ``airflow standalone``, say where it is and how to log in, stop it on Ctrl-C or SIGTERM."""
    home = Path(os.environ.get("AIRFLOW_HOME") or root / ".airflow")
    env = airflow_environ(root, home, port, host, resolve_source(), os.environ)
    home = Path(env["AIRFLOW_HOME"])
    passwords = Path(env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"])
    password = ensure_password(passwords)
    url = f"http://{_client_host(host)}:{port}"
    log_path = home / LOG_FILE
    print(f"Airflow for {root}: DAGs from {root / 'dags'}, home {home}")
    source = SOURCE_CONN_ID if f"AIRFLOW_CONN_{SOURCE_CONN_ID.upper()}" in env else "(none configured)"
    print(f"connections: spark_default, source {source}; Airflow's log: {log_path}")
    out = None if verbose else open(log_path, "ab")
    # its own process group: the scheduler, triggerer and task processes are stopped with it
    proc = subprocess.Popen(["airflow", "standalone"], env=env, stdout=out, stderr=subprocess.STDOUT,
                            start_new_session=True)  # fmt: skip
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    announced = False
    try:
        while proc.poll() is None and not stopping:
            if not announced and _ready(url):
                print(f"ready: {url}  (log in as {USER}, password {password}; kept in {passwords})")
                print("stop with Ctrl-C", flush=True)
                announced = True
            time.sleep(1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        if out is not None:
            out.close()
    if stopping:
        print("Airflow stopped")
        return 0
    print(f"airflow standalone exited with {proc.returncode}; see {log_path}", file=sys.stderr)
    return proc.returncode or 1
