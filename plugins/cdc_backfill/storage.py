"""Where the lake is: every location as a URI (a local path, ``file://``, ``s3://bucket/prefix``), and
what each reader and writer needs to reach it (pure but for building a filesystem object).

One storage layer on the Python side: pyarrow's filesystems. pyarrow already reads and writes every
Parquet file here, its S3 filesystem takes the standard AWS settings, and delta-rs takes the same
settings as storage options, so no second client (fsspec) sits in the product's path; boto3 only writes
the commit points that must be unique, by conditional PUT, which pyarrow's filesystem cannot. Spark
gets the same ``s3://`` URI, which its session maps to the s3a connector with the settings that reach the
same endpoint.

The S3 settings come from the standard AWS environment variables (``AWS_ENDPOINT_URL``,
``AWS_REGION`` or ``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``) and ``CDC_BACKFILL_S3_PATH_STYLE`` (1: path-style addressing, which S3-compatible
servers such as MinIO need). They are never printed: :func:`describe` masks them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

SCHEMES = ("file", "s3")
PATH_STYLE = "CDC_BACKFILL_S3_PATH_STYLE"


class StorageError(ValueError):
    """A location that cannot be used as given; the message says why and what to give instead."""


@dataclass(frozen=True)
class Location:
    """A folder of the lake: ``scheme`` file or s3; ``bucket`` for s3; ``path`` without a leading slash
    for s3, absolute for a local folder."""

    scheme: str
    path: str
    bucket: str = ""

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"


def parse_location(text: str | Path, base: Path | None = None) -> Location:
    """A location as a user types it: a path (relative to ``base`` or the working folder), ``file://``
    or ``s3://bucket/prefix``. StorageError for anything else."""
    raw = str(text).strip()
    if not raw:
        raise StorageError("no location given: give a folder or s3://bucket/prefix")
    if "://" not in raw:
        return Location("file", str((base or Path.cwd()) / raw) if not Path(raw).is_absolute() else raw)
    parsed = urlparse(raw)
    scheme = parsed.scheme.lower()
    if scheme in ("s3a", "s3n"):
        scheme = "s3"
    if scheme not in SCHEMES:
        raise StorageError(
            f"{raw}: {parsed.scheme}:// is not a lake location here: give a folder or s3://bucket/prefix"
        )
    if scheme == "file":
        if parsed.netloc not in ("", "localhost"):
            raise StorageError(f"{raw}: a file:// URI names no host here: give file:///absolute/path")
        return Location("file", parsed.path)
    if not parsed.netloc:
        raise StorageError(f"{raw}: no bucket: give s3://bucket/prefix")
    return Location("s3", parsed.path.strip("/"), parsed.netloc)


def s3_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The S3 settings from the standard AWS environment (only those given)."""
    env = os.environ if environ is None else environ
    out = {}
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        if env.get(key):
            out[key] = env[key]
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        out["AWS_REGION"] = region
    if env.get(PATH_STYLE, "").strip().lower() in ("1", "true", "yes"):
        out[PATH_STYLE] = "1"
    return out


def filesystem(location: Location, environ: Mapping[str, str] | None = None) -> Any:
    """The pyarrow filesystem that reaches ``location`` (``lakepath.S3Path.fs_path`` names an object in
    it)."""
    from pyarrow import fs

    if location.is_local:
        return fs.LocalFileSystem()
    s = s3_settings(environ)
    endpoint = s.get("AWS_ENDPOINT_URL", "")
    kwargs: dict[str, Any] = {"region": s.get("AWS_REGION", "us-east-1")}
    if endpoint:
        parsed = urlparse(endpoint)
        kwargs["endpoint_override"] = parsed.netloc or parsed.path
        kwargs["scheme"] = parsed.scheme or "https"
    if "AWS_ACCESS_KEY_ID" in s:
        kwargs.update(access_key=s["AWS_ACCESS_KEY_ID"], secret_key=s.get("AWS_SECRET_ACCESS_KEY", ""))
        if "AWS_SESSION_TOKEN" in s:
            kwargs["session_token"] = s["AWS_SESSION_TOKEN"]
    kwargs["force_virtual_addressing"] = not path_style(s)
    return fs.S3FileSystem(**kwargs)


def path_style(settings: Mapping[str, str]) -> bool:
    """Path-style addressing (``endpoint/bucket/key``): asked for, or implied by an endpoint of one's own
    (MinIO, moto), where buckets are not host names. Every client decides it here."""
    return PATH_STYLE in settings or bool(settings.get("AWS_ENDPOINT_URL"))


def s3_client(environ: Mapping[str, str] | None = None) -> Any:
    """boto3's S3 client on the same settings, for what pyarrow's filesystem cannot do (conditional
    PUTs)."""
    import boto3
    from botocore.config import Config

    s = s3_settings(environ)
    return boto3.client(
        "s3",
        endpoint_url=s.get("AWS_ENDPOINT_URL"),
        region_name=s.get("AWS_REGION", "us-east-1"),
        config=Config(s3={"addressing_style": "path" if path_style(s) else "auto"}),
    )


def delta_options(location: Location, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """delta-rs' storage options for ``location``: the same settings, and commits by conditional put
    (an object written only if absent), so two writers can never both take one version."""
    if location.is_local:
        return {}
    s = s3_settings(environ)
    out = {k: v for k, v in s.items() if k != PATH_STYLE}
    out.setdefault("AWS_REGION", "us-east-1")
    out["aws_conditional_put"] = "etag"
    endpoint = s.get("AWS_ENDPOINT_URL", "")
    if endpoint.startswith("http://"):
        out["AWS_ALLOW_HTTP"] = "true"
    if path_style(s):
        out["AWS_VIRTUAL_HOSTED_STYLE_REQUEST"] = "false"
    return out


def spark_conf(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Spark settings that reach S3 through the s3a connector, for every session: ``s3://`` and
    ``s3a://`` both name it (the product's URIs are ``s3://``), and the endpoint, addressing, region and
    credentials of :func:`s3_settings` where given (Spark redacts the credentials in its UI and logs;
    without them s3a takes its own chain: instance roles, the AWS environment). The connector itself
    comes by its Maven coordinates (``spark.packages.s3_connector``)."""
    s = s3_settings(environ)
    conf = {"spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem"}
    endpoint = s.get("AWS_ENDPOINT_URL", "")
    if endpoint:
        parsed = urlparse(endpoint)
        conf["spark.hadoop.fs.s3a.endpoint"] = parsed.netloc or endpoint
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = "false" if parsed.scheme == "http" else "true"
    if path_style(s):
        conf["spark.hadoop.fs.s3a.path.style.access"] = "true"
    if "AWS_REGION" in s:
        conf["spark.hadoop.fs.s3a.endpoint.region"] = s["AWS_REGION"]
    if "AWS_ACCESS_KEY_ID" in s:
        conf["spark.hadoop.fs.s3a.access.key"] = s["AWS_ACCESS_KEY_ID"]
        conf["spark.hadoop.fs.s3a.secret.key"] = s.get("AWS_SECRET_ACCESS_KEY", "")
        # the keys given, not the default chain's first finds (the environment's, an instance role)
        conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = (
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
        )
        if "AWS_SESSION_TOKEN" in s:
            conf["spark.hadoop.fs.s3a.session.token"] = s["AWS_SESSION_TOKEN"]
            conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = (
                "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
            )
    return conf


_SECRET_WORDS = ("secret", "access.key", "access_key", "token", "password")


def describe(settings: Mapping[str, str]) -> dict[str, str]:
    """``settings`` as they may be printed: every credential masked."""
    return {k: ("***" if any(w in k.lower() for w in _SECRET_WORDS) else v) for k, v in settings.items()}
