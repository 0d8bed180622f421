"""A snapshot's ``additional-condition`` over key columns, read exactly enough to evaluate it on the
state (docs/design.md §6 rule 7): a finished snapshot with a condition removes the phantom rows that
satisfy it, so the state must select the same keys the source's query selected.

Pure: the condition is parsed with sqlglot for the source's dialect into a small tree of comparisons
between a key column and a constant (:class:`Compare`, :class:`IsNull`, :class:`AllOf`,
:class:`AnyOf`, :class:`Negate`), which ``cdc_backfill.reconcile.spark.phantoms`` turns into a Spark column.
Anything whose meaning could differ between the source and Spark is refused with the reason (then no
row is removed): a non-key column (a row that stopped matching may still exist), a function, a text
column ordered by the column's collation (only ``COLLATE "C"`` orders text as Spark does: by bytes),
a type Spark holds differently (timestamps, floats, text beyond the plain kinds).
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from cdc_backfill.pgtypes import PgColumn, decimal_shape
from cdc_backfill.signals.conditions import SQLGLOT_DIALECTS

ORDERING = {exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
EQUALITY = {exp.EQ: "=", exp.NEQ: "<>"}
FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "=", "<>": "<>"}
BYTE_ORDER_COLLATIONS = ("C", "POSIX", "ucs_basic")
_TEXT_TYPES = ("text", "uuid", "character varying", "varchar")


class Inexact(ValueError):
    """The condition cannot be evaluated on the state exactly as the source did; the message says why."""


@dataclass(frozen=True)
class Compare:
    column: str
    op: str  # = <> < <= > >=
    value: Any  # a Python value of the column's Spark type


@dataclass(frozen=True)
class IsNull:
    column: str


@dataclass(frozen=True)
class AllOf:
    parts: tuple[KeyCondition, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[KeyCondition, ...]


@dataclass(frozen=True)
class Negate:
    part: KeyCondition


KeyCondition = Compare | IsNull | AllOf | AnyOf | Negate


@dataclass(frozen=True)
class _Ref:
    column: PgColumn
    byte_order: bool  # compared under COLLATE "C"


def key_condition(condition: str, dialect: str, key: Sequence[PgColumn]) -> KeyCondition:
    """The condition as a tree over ``key``; :class:`Inexact` when it is not exactly that.

    ``dialect`` is SQLAlchemy's name for the source (postgresql, mssql, oracle, mysql)."""
    glot = SQLGLOT_DIALECTS.get(dialect)
    if glot is None:
        raise Inexact(f"conditions in the {dialect} dialect are not read")
    try:
        tree = sqlglot.parse_one(condition, read=glot)
    except (ParseError, TokenError) as exc:
        raise Inexact(f"the condition does not parse: {str(exc).splitlines()[0]}") from None
    return _Reader({c.name: c for c in key}).predicate(tree)


class _Reader:
    def __init__(self, key: dict[str, PgColumn]) -> None:
        self.key = key
        self.lower = {n.lower(): c for n, c in key.items()}

    def predicate(self, node: exp.Expression) -> KeyCondition:
        if isinstance(node, exp.Paren):
            return self.predicate(node.this)
        if isinstance(node, exp.And | exp.Or):
            parts = (self.predicate(node.left), self.predicate(node.right))
            return AllOf(parts) if isinstance(node, exp.And) else AnyOf(parts)
        if isinstance(node, exp.Not):
            return Negate(self.predicate(node.this))
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise Inexact(f"{node.sql()} is not a test for NULL")
            return IsNull(self.column(node.this).column.name)
        if isinstance(node, exp.Between):
            low = exp.GTE(this=node.this, expression=node.args["low"])
            high = exp.LTE(this=node.this, expression=node.args["high"])
            return AllOf((self.predicate(low), self.predicate(high)))
        if isinstance(node, exp.In):
            if node.args.get("query") is not None or not node.expressions:
                raise Inexact("IN reads a subquery")
            return AnyOf(
                tuple(self.predicate(exp.EQ(this=node.this, expression=e)) for e in node.expressions)
            )
        for kind, op in (ORDERING | EQUALITY).items():
            if isinstance(node, kind):
                return self.compare(node.left, op, node.right)
        raise Inexact(f"{_short(node)} is not a comparison of key columns with constants")

    def compare(self, left: exp.Expression, op: str, right: exp.Expression) -> KeyCondition:
        left, right = _unparen(left), _unparen(right)
        if isinstance(left, exp.Tuple) or isinstance(right, exp.Tuple):
            return self.rows(left, op, right)
        if not self.is_column(left):
            left, right, op = right, left, FLIPPED[op]
        ref = self.column(left)
        if op in ORDERING.values() and ref.column.kind == "text" and not ref.byte_order:
            raise Inexact(
                f"{ref.column.name} is text ordered by its collation, which Spark does not know "
                '(compare it with COLLATE "C")'
            )
        return Compare(ref.column.name, op, self.constant(right, ref.column))

    def rows(self, left: exp.Expression, op: str, right: exp.Expression) -> KeyCondition:
        """``(a, b) op (x, y)``, as the database compares row values: lexicographically."""
        if not (isinstance(left, exp.Tuple) and isinstance(right, exp.Tuple)):
            raise Inexact("a row value is compared with a single value")
        ls, rs = left.expressions, right.expressions
        if len(ls) != len(rs) or not ls:
            raise Inexact("row values of different lengths are compared")
        if op == "=":
            return AllOf(tuple(self.compare(a, "=", b) for a, b in zip(ls, rs, strict=True)))
        if op == "<>":
            return AnyOf(tuple(self.compare(a, "<>", b) for a, b in zip(ls, rs, strict=True)))
        if len(ls) == 1:
            return self.compare(ls[0], op, rs[0])
        strict = op[0]  # the first column decides unless equal: > or <
        rest = self.rows(exp.Tuple(expressions=ls[1:]), op, exp.Tuple(expressions=rs[1:]))
        first = self.compare(ls[0], strict, rs[0])
        return AnyOf((first, AllOf((self.compare(ls[0], "=", rs[0]), rest))))

    def is_column(self, node: exp.Expression) -> bool:
        node = _unparen(node)
        return isinstance(node, exp.Column) or (isinstance(node, exp.Collate) and self.is_column(node.this))

    def column(self, node: exp.Expression) -> _Ref:
        node = _unparen(node)
        byte_order = False
        if isinstance(node, exp.Collate):
            name = (
                node.expression.name if isinstance(node.expression, exp.Expression) else str(node.expression)
            )
            if name not in BYTE_ORDER_COLLATIONS:
                raise Inexact(f'COLLATE "{name}" orders text differently from Spark')
            byte_order, node = True, _unparen(node.this)
        if not isinstance(node, exp.Column) or node.table:
            raise Inexact(f"{_short(node)} is not a key column")
        ident = node.this
        quoted = isinstance(ident, exp.Identifier) and ident.quoted
        name = node.name
        col = self.key.get(name) if quoted else self.lower.get(name.lower())
        if col is None:
            raise Inexact(f"{name} is not a key column: a row that stopped matching may still exist")
        if not _comparable(col):
            raise Inexact(f"{col.name} is {col.type}, which Spark does not hold as the source compares it")
        return _Ref(col, byte_order)

    def constant(self, node: exp.Expression, col: PgColumn) -> Any:
        node = _unparen(node)
        if isinstance(node, exp.Cast) and isinstance(node.to, exp.DataType):
            node = _unparen(node.this)
        negative = False
        if isinstance(node, exp.Neg):
            negative, node = True, _unparen(node.this)
        if isinstance(node, exp.Boolean) and col.kind == "bool" and not negative:
            return bool(node.this)
        if isinstance(node, exp.DPipe) and not negative:
            # 'a :' || 'b': verify writes text with a colon so (SQLAlchemy would read ':b' as a parameter)
            return _value(col, _text(node), True)
        if not isinstance(node, exp.Literal):
            raise Inexact(f"{_short(node)} is not a constant")
        text = ("-" if negative else "") + str(node.this)
        try:
            return _value(col, text, node.is_string)
        except (ValueError, InvalidOperation):
            raise Inexact(f"{text!r} is not a {col.type} value") from None


def _comparable(col: PgColumn) -> bool:
    if col.kind in ("int", "bool", "date"):
        return True
    if col.kind == "numeric":
        return decimal_shape(col) is not None
    return col.kind == "text" and col.type.split("(")[0] in _TEXT_TYPES


def _value(col: PgColumn, text: str, quoted: bool) -> Any:
    kind = col.kind
    if kind == "int":
        return int(text.strip())
    if kind == "numeric":
        value = Decimal(text.strip())
        if not value.is_finite():
            raise ValueError(text)
        return value
    if kind == "bool":
        return {"true": True, "t": True, "false": False, "f": False}[text.strip().lower()]
    if kind == "date":
        return dt.date.fromisoformat(text.strip())
    if col.type == "uuid":
        return str(uuid.UUID(text))  # lower case, as the state holds it
    if not quoted:
        raise ValueError(text)
    return text


def _text(node: exp.Expression) -> str:
    """A concatenation of string literals, as one string."""
    node = _unparen(node)
    if isinstance(node, exp.DPipe):
        return _text(node.left) + _text(node.right)
    if isinstance(node, exp.Literal) and node.is_string:
        return str(node.this)
    raise Inexact(f"{_short(node)} is not a constant")


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _short(node: exp.Expression) -> str:
    sql = node.sql()
    return sql if len(sql) <= 60 else sql[:57] + "..."
