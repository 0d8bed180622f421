"""A real S3-compatible server for the tests: moto's, started as a process on 127.0.0.1 (never a mock
inside the test process), and the AWS settings that reach it, as a user would set them."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    """``moto_server`` on a free loopback port; ``env`` the standard AWS settings that reach it."""

    log: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "cdc-backfill-tests",
            "AWS_SECRET_ACCESS_KEY": "cdc-backfill-tests-secret",
            "AWS_REGION": "us-east-1",
        }

    def start(self, timeout: float = 60) -> S3Server:
        bin_dir = Path(sys.executable).parent
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(bin_dir / "moto_server"), "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"moto_server exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}"
                )
            try:
                urllib.request.urlopen(self.endpoint, timeout=2).close()
                return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"moto_server did not answer on {self.endpoint} in {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)

    def new_bucket(self) -> str:
        """A bucket of its own for one test."""
        import boto3

        name = f"lake-{uuid.uuid4().hex[:12]}"
        client = boto3.client("s3", endpoint_url=self.endpoint, **_credentials(self.env))
        client.create_bucket(Bucket=name)
        return name


def _credentials(env: dict[str, str]) -> dict[str, str]:
    return {
        "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
        "region_name": env["AWS_REGION"],
    }


def upload(local: Path, dest: object) -> None:
    """Copy a local folder's files into a lake folder, names kept: an S3 path
    (``cdc_backfill.lakepath.S3Path``) or another local folder."""
    import shutil

    from pyarrow import fs

    if isinstance(dest, Path):
        shutil.copytree(local, dest, dirs_exist_ok=True)
        return
    fs.copy_files(
        str(local), dest.fs_path, source_filesystem=fs.LocalFileSystem(), destination_filesystem=dest.fs
    )  # type: ignore[attr-defined]
