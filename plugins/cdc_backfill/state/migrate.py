"""The earlier state format converted to a Delta table, in place (docs/design.md §6.1).

Before Delta, ``<state>/<collection>/`` held numbered version folders (``v000007/part-*.parquet``),
``current`` (a link to the newest complete one), ``_log.json`` (the versions written) and, in each
version, ``_cdc_meta.json`` (what it consumed) and ``_cdc_carry/`` (events held for the next run). The
conversion commits the current version's files as they are as version 0 of a Delta table (no row is
copied), moves its carry where the table keeps carries, then removes the link, the log and the older
versions. Until the commit nothing is changed, so a conversion that fails can be run again.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.layout import CARRY_DIR
from cdc_backfill.state.table import LEGACY_CURRENT, StateTable, StateVersion

log = logging.getLogger(__name__)

LEGACY_LOG = "_log.json"
LEGACY_META = "_cdc_meta.json"
_LEGACY_VERSION = re.compile(r"^v(\d{6})$")
_SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"


def legacy_collections(state: Path) -> list[str]:
    root = lake_path(state)
    if not root.is_dir():
        return []
    return sorted(
        p.name
        for p in root.iterdir()
        if not p.name.startswith("_") and StateTable(root, p.name).legacy_version()
    )


def migrate(state: Path, collection: str) -> StateVersion | None:
    """Convert one collection's state; its new current version, or None when there was nothing to convert."""
    table = StateTable(state, collection)
    version = table.legacy_version()
    if version is None:
        return None
    meta: dict[str, Any] = {}
    if (version / LEGACY_META).exists():
        meta = json.loads((version / LEGACY_META).read_text())
    runs = _legacy_log(table.path)
    run = {k: v for k, v in (runs[-1] if runs else {}).items() if k not in ("version", "written_at")}
    old_carry = version / CARRY_DIR
    carry = old_carry.is_dir()
    if carry:
        target = table.carry_dir(version)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(old_carry, target, dirs_exist_ok=True)
    run["migrated_from"] = f"{version.name} of the earlier folder format"
    table.commit(version, _schema_json(version), None, meta, run, carry=carry)
    for path in table.path.iterdir():
        if path.name in (LEGACY_CURRENT, LEGACY_LOG) or path.name.startswith(f".{LEGACY_CURRENT}."):
            path.unlink()
        elif _LEGACY_VERSION.match(path.name) and path.name != version.name:
            shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(old_carry, ignore_errors=True)
    (version / LEGACY_META).unlink(missing_ok=True)
    log.info(
        "%s: converted the state from %s of the earlier folder format to a Delta table",
        collection,
        version.name,
    )
    return table.current()


def _legacy_log(folder: Path) -> list[dict[str, Any]]:
    path = folder / LEGACY_LOG
    return json.loads(path.read_text()) if path.exists() else []


def _schema_json(version: Path) -> str:
    """The schema Spark wrote into the version's footers (Delta's schema JSON is Spark's); else the
    Parquet schema as Arrow reads it."""
    import pyarrow.parquet as pq
    from deltalake import Schema

    parts = sorted(version.glob("*.parquet"))
    if not parts:
        raise ValueError(f"{version} holds no Parquet file: rebuild the state with a reconcile")
    arrow = pq.read_schema(parts[0])
    spark = (arrow.metadata or {}).get(_SPARK_SCHEMA_KEY)
    if spark:
        return spark.decode()
    return Schema.from_arrow(arrow).to_json()
