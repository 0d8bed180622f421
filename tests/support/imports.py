"""What importing a module pulls in, measured in a fresh interpreter; what a file imports, read from its
syntax tree."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path


def imported_after(statement: str) -> set[str]:
    """The top-level packages a fresh interpreter holds after ``statement``."""
    return {m.split(".")[0] for m in modules_after(statement)}


def modules_after(statement: str) -> set[str]:
    """Every module a fresh interpreter holds after ``statement``."""
    code = textwrap.dedent(
        f"""
        import sys
        {statement}
        print(",".join(sorted(sys.modules)))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return set(out.stdout.strip().split(","))


def project_imports(path: Path, package_root: Path) -> list[tuple[str, str]]:
    """``(module imported, name imported)`` for each ``from cdc_backfill... import name`` in a file, read
    from its syntax tree (relative imports resolved), whether at the top or inside a function."""
    module = ".".join(path.relative_to(package_root).with_suffix("").parts)
    if path.name == "__init__.py":
        module = module.removesuffix(".__init__")
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if path.name != "__init__.py":
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            out += [(target, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [(alias.name, "") for alias in node.names]
    return [(t, n) for t, n in out if t == "cdc_backfill" or t.startswith(("cdc_backfill.", "tests."))]


def import_time_imports(path: Path, package_root: Path) -> set[str]:
    """Every module a file imports when it is imported: the imports at its top level, in its classes'
    bodies and in ``try``/``if`` blocks there, but not inside functions nor under ``if TYPE_CHECKING``.
    Third-party modules by their top name; the project's by their whole name (relative ones resolved),
    with ``from package import name`` also naming ``package.name`` in case it is a module."""
    module = ".".join(path.relative_to(package_root).with_suffix("").parts).removesuffix(".__init__")
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = base[: len(base) - (node.level - 1)]
                    target = ".".join([*parts, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                out.add(target)
                out.update(f"{target}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, (ast.ClassDef, ast.With)):
                visit(node.body)

    visit(ast.parse(path.read_text()).body)
    return out
