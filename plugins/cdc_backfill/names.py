"""Collection names: one rule for every module that writes or reads them (DESIGN.md §2)."""

from __future__ import annotations


def collection_name(schema: str, table: str) -> str:
    """``schema.table``; when a part holds a dot, each part is written in double quotes."""
    if "." in schema or "." in table:
        return f'"{schema}"."{table}"'
    return f"{schema}.{table}"
