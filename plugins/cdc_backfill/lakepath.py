"""A folder or file of the lake as a path object, wherever it is: a local one is a ``pathlib.Path``, one
on S3 an :class:`S3Path` with the same methods the product uses (``/``, ``name``, ``glob``,
``read_bytes``, ``write_bytes``, ``unlink``, ...), over pyarrow's S3 filesystem (``cdc_backfill.storage``).

So every reader and writer takes ``lake_path(text)`` and works on either; what differs is durability,
which ``cdc_backfill.files`` decides by the kind of path: a local file is written to a temporary name,
fsynced and renamed; an S3 object is visible once its single PUT completes, so it is written in place
and a commit point is written last, only if absent where it must be unique.

S3 has no folders: ``mkdir`` does nothing, a folder "exists" once an object lies under it, and an
empty one is gone. ``str()`` of an S3 path is its ``s3://`` URI, which Spark reads too (its session maps
``s3://`` to the s3a connector, ``cdc_backfill.storage.spark_conf``).
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple, TypeAlias

from cdc_backfill.storage import Location, filesystem, parse_location, s3_settings


class S3Path:
    """An object or prefix of an S3 bucket, as a path: ``S3Path("bucket", "landing/log")``."""

    __slots__ = ("bucket", "key")

    def __init__(self, bucket: str, key: str = "") -> None:
        self.bucket = bucket
        self.key = key.strip("/")

    # ------------------------------------------------------------ names (pure)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}" if self.key else f"s3://{self.bucket}"

    def __repr__(self) -> str:
        return f"S3Path({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, S3Path) and (self.bucket, self.key) == (other.bucket, other.key)

    def __hash__(self) -> int:
        return hash((self.bucket, self.key))

    def __lt__(self, other: S3Path) -> bool:
        return str(self) < str(other)

    def __truediv__(self, part: str | PurePosixPath) -> S3Path:
        return S3Path(self.bucket, f"{self.key}/{str(part).strip('/')}" if self.key else str(part))

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1] if self.key else ""

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def parent(self) -> S3Path:
        return S3Path(self.bucket, self.key.rsplit("/", 1)[0] if "/" in self.key else "")

    @property
    def location(self) -> Location:
        return Location("s3", self.key, self.bucket)

    @property
    def fs_path(self) -> str:
        """The path pyarrow's filesystem takes."""
        return f"{self.bucket}/{self.key}".rstrip("/")

    def with_name(self, name: str) -> S3Path:
        return self.parent / name

    def relative_to(self, other: S3Path | str) -> PurePosixPath:
        other = other if isinstance(other, S3Path) else lake_path(other)
        if not isinstance(other, S3Path) or other.bucket != self.bucket:
            raise ValueError(f"{self} is not under {other}")
        if not other.key:
            return PurePosixPath(self.key)
        if self.key != other.key and not self.key.startswith(other.key + "/"):
            raise ValueError(f"{self} is not under {other}")
        return PurePosixPath(self.key[len(other.key) :].lstrip("/") or ".")

    def resolve(self) -> S3Path:
        return self

    def absolute(self) -> S3Path:
        return self

    # ------------------------------------------------------------ the store

    @property
    def fs(self) -> Any:
        return _filesystem(tuple(sorted(s3_settings().items())))

    def _info(self) -> Any:
        return self.fs.get_file_info(self.fs_path)

    def exists(self) -> bool:
        from pyarrow import fs

        return self._info().type != fs.FileType.NotFound

    def is_dir(self) -> bool:
        from pyarrow import fs

        return self._info().type == fs.FileType.Directory

    def is_file(self) -> bool:
        from pyarrow import fs

        return self._info().type == fs.FileType.File

    def stat(self) -> _Stat:
        info = self._info()
        if info.size is None:
            raise FileNotFoundError(str(self))
        mtime = info.mtime.timestamp() if isinstance(info.mtime, datetime) else 0.0
        return _Stat(int(info.size), mtime)

    def _listing(self, recursive: bool) -> list[Any]:
        from pyarrow import fs

        selector = fs.FileSelector(self.fs_path, allow_not_found=True, recursive=recursive)
        return self.fs.get_file_info(selector)

    def _below(self, info: Any) -> S3Path:
        return S3Path(self.bucket, info.path.split("/", 1)[1] if "/" in info.path else "")

    def iterdir(self) -> Iterator[S3Path]:
        return iter(sorted(self._below(i) for i in self._listing(recursive=False)))

    def glob(self, pattern: str) -> Iterator[S3Path]:
        """As ``Path.glob``, for patterns of plain segments (``*/v*/p*.parquet``; no ``**``)."""
        segments = PurePosixPath(pattern).parts
        found = []
        for info in self._listing(recursive=len(segments) > 1):
            path = self._below(info)
            parts = path.relative_to(self).parts
            if len(parts) == len(segments) and all(map(fnmatch.fnmatchcase, parts, segments)):
                found.append(path)
        return iter(sorted(found))

    def rglob(self, pattern: str) -> Iterator[S3Path]:
        """As ``Path.rglob``: every path under this one whose name matches ``pattern``."""
        found = (self._below(i) for i in self._listing(recursive=True))
        return iter(sorted(p for p in found if fnmatch.fnmatchcase(p.name, pattern)))

    def read_bytes(self) -> bytes:
        try:
            with self.fs.open_input_stream(self.fs_path) as stream:
                return stream.read()
        except OSError as exc:
            if not self.is_file():
                raise FileNotFoundError(str(self)) from None
            raise exc

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes) -> int:
        """One PUT: the object is visible whole once it returns, never in part."""
        with self.fs.open_output_stream(self.fs_path) as out:
            out.write(data)
        return len(data)

    def write_text(self, text: str, encoding: str = "utf-8") -> int:
        return self.write_bytes(text.encode(encoding))

    def open(self, mode: str = "rb") -> Any:
        """Read only: a stream read in order, buffered (lines and blocks as a local file gives them);
        an object is written whole, by :meth:`write_bytes`."""
        if mode != "rb":
            raise ValueError(f"{self}: mode {mode!r} is not supported on S3 (rb)")
        import io

        return io.BufferedReader(self.fs.open_input_stream(self.fs_path), 1 << 20)

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing to make (an S3 folder is the prefix of the objects under it), but the bucket must
        exist: FileNotFoundError now, not at the first write an hour later."""
        if not _bucket_exists(self.bucket, tuple(sorted(s3_settings().items()))):
            raise FileNotFoundError(f"no bucket {self.bucket} at the S3 endpoint: create it, or give another")

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            self.fs.delete_file(self.fs_path)
        except (FileNotFoundError, OSError):
            if self.is_file():
                raise
            if not missing_ok:
                raise FileNotFoundError(str(self)) from None

    def replace(self, target: S3Path) -> S3Path:
        """Move the object (S3 copies, then deletes): the target is whole once it is visible."""
        self.fs.move(self.fs_path, target.fs_path)
        return target

    def rmtree(self) -> None:
        """Every object under this prefix (``shutil.rmtree`` for S3)."""
        from pyarrow import fs

        if self._info().type == fs.FileType.Directory:
            self.fs.delete_dir(self.fs_path)


class _Stat(NamedTuple):
    st_size: int
    st_mtime: float


LakePath: TypeAlias = Path | S3Path


@functools.cache
def _filesystem(settings: tuple[tuple[str, str], ...]) -> Any:
    return filesystem(Location("s3", "", ""), dict(settings))


@functools.cache
def _bucket_exists(bucket: str, settings: tuple[tuple[str, str], ...]) -> bool:
    """Asked once per bucket and settings (``mkdir`` runs at every roll); only a yes is kept."""
    from pyarrow import fs

    found = _filesystem(settings).get_file_info(bucket).type != fs.FileType.NotFound
    if not found:
        _bucket_exists.cache_clear()
    return found


def lake_path(where: str | Path | S3Path) -> LakePath:
    """A location as a path object: an :class:`S3Path` for ``s3://`` (or ``s3a://``), else a local
    ``Path`` (``file://`` stripped; relative paths stay relative). StorageError for other schemes."""
    if isinstance(where, (Path, S3Path)):
        return where
    text = str(where)
    if "://" not in text:
        return Path(text)
    loc = parse_location(text)
    return S3Path(loc.bucket, loc.path) if loc.bucket else Path(loc.path)


def same_file(uri: str) -> str:
    """A file as Spark or delta-rs names it (``file:/…``, ``s3a://…``, percent-encoded) and as the product
    names it (a resolved local path, ``s3://…``), one string either way: what two names are compared by."""
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    if parsed.scheme.lower() in ("s3", "s3a", "s3n"):
        return f"s3://{parsed.netloc}/{unquote(parsed.path).lstrip('/')}"
    return str(Path(unquote(parsed.path) if parsed.scheme == "file" else uri).resolve())


def rmtree(path: LakePath) -> None:
    """A folder and everything in it, local or on S3 (nothing if it is not there)."""
    import shutil

    if isinstance(path, S3Path):
        path.rmtree()
    else:
        shutil.rmtree(path, ignore_errors=True)


def _source(path: LakePath | str) -> tuple[str, Any]:
    p = lake_path(path)
    return (p.fs_path, p.fs) if isinstance(p, S3Path) else (str(p), None)


def read_parquet(path: LakePath | str, columns: list[str] | None = None) -> Any:
    """A Parquet file of the lake as an Arrow table (``columns``: only these)."""
    import pyarrow.parquet as pq

    where, fs = _source(path)
    return pq.read_table(where, columns=columns, filesystem=fs)


def parquet_schema(path: LakePath | str) -> Any:
    """A Parquet file's Arrow schema, with its key-value metadata (its footer only)."""
    import pyarrow.parquet as pq

    where, fs = _source(path)
    return pq.read_schema(where, filesystem=fs)


def parquet_dataset(files: Sequence[str], schema: Any) -> Any:
    """Parquet files of the lake (all local, or all in one S3 store) as one Arrow dataset with
    ``schema`` (also when there is no file)."""
    import pyarrow.dataset as ds

    sources = [_source(f) for f in files]
    fs = sources[0][1] if sources else None
    return ds.dataset([where for where, _ in sources], schema=schema, format="parquet", filesystem=fs)


def parquet_metadata(path: LakePath | str) -> Any:
    """A Parquet file's footer: rows, row groups, statistics."""
    import pyarrow.parquet as pq

    where, fs = _source(path)
    return pq.read_metadata(where, filesystem=fs)
