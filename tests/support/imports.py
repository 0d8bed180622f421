"""What importing a module pulls in, measured in a fresh interpreter; what a file imports, read from its
syntax tree."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path


def imported_after(statement: str) -> set[str]:
    code = textwrap.dedent(
        f"""
        import sys
        {statement}
        print(",".join(sorted({{m.split(".")[0] for m in sys.modules}})))
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
