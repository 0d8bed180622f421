"""A collection's state as a Delta Lake table (docs/design.md §6.1), read and committed with delta-rs.

``<state>/<collection>/`` is a Delta table: ``_delta_log/`` names the Parquet files of each version.
Spark writes a run's files into a folder of their own (``v000007-<token>/part-*.parquet``); the driver
then commits them in one Delta commit that adds them, removes the files they replace, sets the schema
and records the run in the commit's info (:data:`META_KEY`: what the version consumed, which the next
run starts from; :data:`RUN_KEY`: its counts). A run that fails before its commit leaves only files no
version names: every reader goes through the log, so none sees them, and a vacuum removes them.

No Spark here: the reconcile's Spark half writes the files and calls :meth:`StateTable.commit`.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from cdc_backfill.eventlog.schema import POSITION
from cdc_backfill.lakepath import LakePath, S3Path, lake_path, parquet_dataset, rmtree, same_file
from cdc_backfill.landing.layout import CARRY_DIR, REMOVED_DIR
from cdc_backfill.state.file_stats import file_stats
from cdc_backfill.storage import delta_options

log = logging.getLogger(__name__)

META_KEY = "cdc_backfill.meta"  # what the version consumed: reconcile.runs.RunMeta, the key, the carry
RUN_KEY = "cdc_backfill.run"  # the run's counts: rows, events applied, READs judged, ...
# Delta's own defaults, written into each new table so that they show where users change them
TABLE_CONFIG = {
    "delta.logRetentionDuration": "interval 30 days",
    "delta.deletedFileRetentionDuration": "interval 7 days",
}


# the link to the newest version folder of the folder format states had before Delta (never read now)
OLD_FORMAT_LINK = "current"


# The state's own columns beside the source's: the position each row is as of (the typed log's
# position column, the same name and form), and the columns no event has sent a value for yet.
STATE_POSITION = POSITION
UNKNOWN = "_cdc_unknown"
BOOKKEEPING = (STATE_POSITION, UNKNOWN)


class StateError(ValueError):
    """A state that cannot be read or committed as asked; the message says why and what to do."""


@dataclass(frozen=True)
class StateVersion:
    """One version of a collection's state, as its Delta log names it."""

    table: LakePath
    version: int
    files: tuple[str, ...]  # its Parquet files, absolute (s3:// URIs on S3)
    schema_json: str  # the table's schema (Delta's schema JSON, which is Spark's StructType JSON)
    meta: dict[str, Any] = field(
        default_factory=dict
    )  # META_KEY of the run that wrote it ({}: another writer)
    run: dict[str, Any] = field(default_factory=dict)  # RUN_KEY of that run
    timestamp_ms: int = 0
    file_rows: tuple[int | None, ...] = ()  # each file's rows, from its statistics (None: not recorded)

    @property
    def carry(self) -> LakePath | None:
        """The events the run that wrote this version held for the next one, if any."""
        name = self.meta.get("carry")
        path = self.table / CARRY_DIR / name if name else None
        return path if path is not None and path.is_dir() else None

    @property
    def removed(self) -> LakePath | None:
        """The removals it remembers (``reconcile.spark.removals``), if any."""
        name = self.meta.get("removed")
        path = self.table / REMOVED_DIR / name if name else None
        return path if path is not None and path.is_dir() else None

    def dataset(self) -> Any:
        """Its rows as an Arrow dataset: the files its log names, with the table's schema (also when it
        has no file)."""
        import pyarrow as pa
        from deltalake import Schema

        return parquet_dataset(self.files, pa.schema(Schema.from_json(self.schema_json).to_arrow()))


def is_state_table(folder: LakePath) -> bool:
    return (lake_path(folder) / "_delta_log").is_dir()


def current_version(
    state: Path | str, collection: str, version: int | None = None, as_of: datetime | str | None = None
) -> StateVersion | None:
    """A collection's current version (or ``version``, or the one current at ``as_of``); None when it has
    no state. StateError for a folder this release does not read."""
    table = StateTable(state, collection)
    if table.old_format():
        raise StateError(old_format_reason(state, collection))
    return table.current(version, as_of)


def old_format_reason(state: Path | str, collection: str) -> str:
    return (
        f"the state of {collection} in {state} is in the folder format of releases before Delta tables, "
        "which this release does not read: reconcile into a new --state folder"
    )


def state_collections(state: LakePath) -> list[str]:
    """The collections that have a state table under ``state``, by name."""
    root = lake_path(state)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if not p.name.startswith(("_", ".")) and is_state_table(p))


def table_uri(state: LakePath | str, collection: str) -> str:
    """A collection's state table as a URI (``file:///…``, ``s3://…``): how Airflow names it as an asset,
    and a user's DAG scheduled on it."""
    table = lake_path(state) / collection
    return table.resolve().as_uri() if isinstance(table, Path) else str(table)


class StateTable:
    """One collection's state table: its versions, history and commits."""

    def __init__(self, state: LakePath | str, collection: str) -> None:
        self.collection = collection
        self.path = lake_path(state) / collection
        # delta-rs reaches S3 with the same settings as every other reader (cdc_backfill.storage)
        self.options = delta_options(self.path.location) if isinstance(self.path, S3Path) else None

    def exists(self) -> bool:
        return is_state_table(self.path)

    def old_format(self) -> bool:
        """A state in the folder format of releases before Delta tables (local only): not read."""
        return (
            not isinstance(self.path, S3Path) and not self.exists() and (self.path / OLD_FORMAT_LINK).exists()
        )

    def _open(self, version: int | None = None, as_of: datetime | str | None = None) -> Any:
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError

        try:
            table = DeltaTable(str(self.path), storage_options=self.options)
            if version is not None:
                table.load_as_version(version)
            elif as_of is not None:
                table.load_as_version(as_of)
        except (DeltaError, ValueError, OSError) as exc:
            which = f"version {version}" if version is not None else f"as of {as_of}" if as_of else "its log"
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StateError(
                f"{self.collection}: cannot read {which} of the state table {self.path}: {first}"
            ) from None
        return table

    def current(self, version: int | None = None, as_of: datetime | str | None = None) -> StateVersion | None:
        """The newest version (or ``version``, or the one current at ``as_of``); None without a table."""
        if not self.exists():
            return None
        if as_of is not None:
            as_of = as_time(as_of)
            first = min((int(h["timestamp"]) for h in self._open().history() if "timestamp" in h), default=0)
            if as_of.timestamp() * 1000 < first:
                return None  # the table did not exist yet
        if version is not None:
            newest = self._open().version()
            if not 0 <= version <= newest:
                raise StateError(
                    f"{self.collection} has versions 0 to {newest}: there is no version {version}"
                )
        table = self._open(version, as_of)
        number = table.version()
        info = self._commit_info(table, number)
        files, rows = self._files(table)
        return StateVersion(
            self.path,
            number,
            files,
            table.schema().to_json(),
            _json_field(info, META_KEY),
            _json_field(info, RUN_KEY),
            int(info.get("timestamp", 0)),
            rows,
        )

    def _files(self, table: Any) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
        """The version's files (absolute) and each one's rows as its statistics give them."""
        import pyarrow as pa

        actions = pa.table(table.get_add_actions(flatten=True))
        paths = actions.column("path").to_pylist()
        counts = actions.column("num_records").to_pylist() if "num_records" in actions.column_names else []
        root = str(self.path.resolve())
        # a relative path in the log is a URI path (percent-encoded)
        files = tuple(same_file(p) if "://" in p else f"{root}/{unquote(p)}" for p in paths)
        return files, tuple(counts) if counts else tuple(None for _ in files)

    def _commit_info(self, table: Any, number: int) -> dict[str, Any]:
        """The commit info of the newest commit at or before ``number`` that a reconcile wrote: another
        writer's commit since (a vacuum, an optimize) keeps the files and what they consumed."""
        for limit in (4, 64, None):
            commits = table.history(limit)
            entries = [h for h in commits if int(h.get("version", -1)) <= number]
            for h in sorted(entries, key=lambda h: -int(h.get("version", -1))):
                if META_KEY in h:
                    return h
            if limit is None or len(commits) < limit:
                break
        return {}

    def history(self) -> list[dict[str, Any]]:
        """Every version a reconcile committed, oldest first: version, time, and the run's counts."""
        if not self.exists():
            return []
        out = []
        for h in self._open().history():
            if META_KEY in h:
                out.append(
                    {
                        "version": int(h["version"]),
                        "timestamp_ms": int(h["timestamp"]),
                        **_json_field(h, RUN_KEY),
                    }
                )
        return sorted(out, key=lambda h: h["version"])

    def new_files_dir(self, previous: StateVersion | None) -> LakePath:
        """A folder of its own for the next version's files: nothing else ever writes into it."""
        number = previous.version + 1 if previous is not None else 0
        return self.path / f"v{number:06d}-{secrets.token_hex(4)}"

    def carry_dir(self, files_dir: LakePath) -> LakePath:
        return self.path / CARRY_DIR / files_dir.name

    def removed_dir(self, files_dir: LakePath) -> LakePath:
        return self.path / REMOVED_DIR / files_dir.name

    def commit(
        self,
        files_dir: LakePath,
        schema_json: str,
        read: StateVersion | None,
        meta: dict[str, Any],
        run: dict[str, Any],
        replaced: Sequence[str] | None = None,
        carry: bool = False,
    ) -> int:
        """Commit the Parquet files in ``files_dir`` as the next version after ``read`` (the version the
        run read; None: a new table), replacing all of ``read``'s files or only ``replaced`` (absolute
        paths). Fails with StateError when another run committed since ``read``: nothing is lost, the
        files stay unnamed and the run can be made again. Returns the new version's number."""
        from deltalake import CommitProperties, Schema
        from deltalake import transaction as tx
        from deltalake.exceptions import CommitFailedError

        adds = [self._add_action(p) for p in sorted(lake_path(files_dir).glob("*.parquet"))]
        doc = {**meta, **({"carry": files_dir.name} if carry else {})}
        props = CommitProperties(
            custom_metadata={META_KEY: json.dumps(doc, default=str), RUN_KEY: json.dumps(run, default=str)}
        )
        schema = Schema.from_json(schema_json)
        try:
            if read is None:
                if self.exists():
                    raise StateError(
                        f"{self.collection}: another run created the state table {self.path} meanwhile: "
                        "run the reconcile again"
                    )
                tx.create_table_with_add_actions(
                    str(self.path),
                    schema,
                    adds,
                    mode="error",
                    configuration=TABLE_CONFIG,
                    storage_options=self.options,
                    commit_properties=props,
                )
                return 0
            table = self._open(read.version)
            if replaced is None:
                # every file replaced (and the schema with them): Delta's overwrite removes them itself
                table.create_write_transaction(adds, mode="overwrite", schema=schema, commit_properties=props)
            else:
                # some files replaced, the others kept: the columns are the table's (the caller checked)
                now = int(time.time() * 1000)
                removes = [tx.RemoveAction(self._relative(p), True, now) for p in replaced]
                kept = Schema.from_json(read.schema_json)
                table.create_write_transaction(
                    [*adds, *removes], mode="append", schema=kept, commit_properties=props
                )
        except CommitFailedError as exc:
            first = str(exc).strip().splitlines()[0]
            raise StateError(
                f"{self.collection}: another run committed to the state since version {read.version if read else 0} "
                f"was read ({first}): nothing of this run was committed; run the reconcile again"
            ) from None
        number = self._open().version()
        self._drop_old(CARRY_DIR, files_dir.name if carry else None)
        self._drop_old(REMOVED_DIR, meta.get("removed"))
        return number

    def _add_action(self, path: LakePath) -> Any:
        from deltalake import transaction as tx

        st = path.stat()
        return tx.AddAction(
            self._relative(path), st.st_size, {}, int(st.st_mtime * 1000), True, file_stats(path)
        )

    def _relative(self, path: str | LakePath) -> str:
        return lake_path(path).resolve().relative_to(self.path.resolve()).as_posix()

    def _drop_old(self, folder: str, keep: str | None) -> None:
        """Only the current version's carry and removals are ever read (the next run starts from them)."""
        root = self.path / folder
        for old in root.iterdir() if root.is_dir() else ():
            if old.name != keep:
                rmtree(old)

    def vacuum(self, dry_run: bool = False) -> list[str]:
        """Remove the files no version within the table's retention names (Delta's vacuum, which keeps
        ``delta.deletedFileRetentionDuration``), and any file a failed run left unnamed that long."""
        if not self.exists():
            return []
        table = self._open()
        return list(table.vacuum(dry_run=dry_run, enforce_retention_duration=True))


def as_time(value: datetime | str) -> datetime:
    """A point in time as the user gives it (ISO 8601; without a zone: UTC); StateError if it is not one."""
    from datetime import UTC

    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip())
        except ValueError:
            raise StateError(
                f"not a time: {value!r} (give an ISO 8601 time such as 2026-11-25T14:30:00Z)"
            ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _json_field(info: dict[str, Any], key: str) -> dict[str, Any]:
    raw = info.get(key)
    if isinstance(raw, dict):
        return raw
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        return {}
