"""What importing a module pulls in, measured in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap


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
