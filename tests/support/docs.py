"""The docs' shell blocks as a user runs them: a page's block read under its heading, then its lines
run one by one by bash, as typed into one shell (what a line exports stays for the lines after it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from cdc_backfill.runtime import project_root


def block_under(page: str, heading: str) -> list[str]:
    """The lines of the first ```bash block after ``heading`` in ``page`` (relative to the checkout),
    a line continued by ``\\`` joined to the next."""
    text = (project_root() / page).read_text()
    rest = text[text.index(heading) :]
    start = rest.index("```bash\n") + len("```bash\n")
    block = rest[start : rest.index("```", start)]
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def command_of(line: str) -> str:
    """A block's line without its comment (`` # ...``)."""
    return line.split(" # ", 1)[0].strip()


class Shell:
    """One user's shell in ``cwd``: each line run by bash with the environment the lines before it left."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd, self.env = cwd, dict(env)
        self.ran: list[str] = []  # the lines run, in order

    def run(self, line: str, timeout: float = 900) -> str:
        """The line's stdout; fails, with what it printed, unless it exits 0."""
        exports = line.startswith("export ")
        script = f"{line}\nenv -0" if exports else line
        res = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env, capture_output=True,
                             text=True, timeout=timeout)  # fmt: skip
        assert res.returncode == 0, f"{line}\n{res.stdout[-3000:]}\n{res.stderr[-5000:]}"
        self.ran.append(line)
        if exports:
            self.env = dict(kv.split("=", 1) for kv in res.stdout.split("\0") if "=" in kv)
            return ""
        return res.stdout
