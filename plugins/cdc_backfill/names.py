"""Collection names: one rule for every module that writes or reads them (docs/design.md §2)."""

from __future__ import annotations


def collection_name(schema: str, table: str) -> str:
    """``schema.table``; when a part holds a dot, each part is written in double quotes."""
    if "." in schema or "." in table:
        return f'"{schema}"."{table}"'
    return f"{schema}.{table}"


def quote_ident(name: str) -> str:
    """An SQL identifier in double quotes, a double quote inside it doubled (every dialect we compile)."""
    return '"' + name.replace('"', '""') + '"'


def spark_ident(name: str) -> str:
    """A Spark SQL identifier in backticks, a backtick inside it doubled (for Spark SQL built as text)."""
    return "`" + name.replace("`", "``") + "`"


def spark_string(text: str) -> str:
    """A Spark SQL string literal (for Spark SQL built as text), written as its UTF-8 bytes: whatever the
    text holds, and whether or not the session reads backslash escapes in quoted strings."""
    return f"CAST(X'{text.encode().hex()}' AS STRING)"


def quoted_table(schema: str | None, name: str) -> str:
    """``"schema"."table"`` (``"table"`` without a schema), for SQL built as text."""
    return f"{quote_ident(schema)}.{quote_ident(name)}" if schema else quote_ident(name)


def split_collection(name: str) -> tuple[str | None, str]:
    """``schema.table`` -> (schema, table), the inverse of :func:`collection_name`: ``"a.b"."c"`` ->
    (``a.b``, ``c``); otherwise split at the last dot; a bare ``table`` -> (None, table)."""
    if name.startswith('"') and name.endswith('"') and '"."' in name:
        schema, _, table = name[1:-1].partition('"."')
        return schema, table
    schema, dot, table = name.rpartition(".")
    return (schema or None, table) if dot else (None, name)
