"""``additional-condition``: operator-supplied SQL, accepted only if it is one predicate over a table's columns.

The text is parsed with sqlglot for the source's dialect and every node of the tree must be on a short
list of harmless kinds (comparisons, boolean logic, literals, the table's own columns, a few pure
functions). Anything else (a second statement, a comment, a subquery, DML or DDL, an unknown function
or column) is refused with the reason, before the condition can reach a query.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError

from cdc_backfill.signals.model import SignalError

# SQLAlchemy dialect names to sqlglot's.
SQLGLOT_DIALECTS = {
    "postgresql": "postgres",
    "mssql": "tsql",
    "oracle": "oracle",
    "mysql": "mysql",
    "sqlite": "sqlite",
}

PREDICATES: tuple[type[exp.Expression], ...] = (
    exp.And,
    exp.Or,
    exp.Not,
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
    exp.Is,
    exp.In,
    exp.Between,
    exp.Like,
    exp.ILike,
    exp.Boolean,
)
VALUES: tuple[type[exp.Expression], ...] = (
    exp.Column,
    exp.Identifier,
    exp.Literal,
    exp.Null,
    exp.Paren,
    exp.Tuple,
    exp.Neg,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.Mod,
    exp.DPipe,
    exp.Cast,
    exp.DataType,
    exp.DataTypeParam,
    exp.Escape,
    exp.Interval,
    exp.Var,
    # ``x COLLATE "C"``: compares text by bytes whatever the column's collation (verify's key ranges)
    exp.Collate,
)
# Pure functions an operator may use to select rows. No function that reads other tables, sleeps,
# writes, or depends on anything but its arguments (and the clock, for dates).
SAFE_FUNCTIONS: tuple[type[exp.Expression], ...] = (
    exp.Lower,
    exp.Upper,
    exp.Coalesce,
    exp.Abs,
    exp.Length,
    exp.Trim,
    exp.Substring,
    exp.CurrentDate,
    exp.CurrentTimestamp,
    exp.Round,
    exp.Floor,
    exp.Ceil,
)
SAFE_FUNCTION_NAMES = "lower, upper, coalesce, abs, length, trim, substring, round, floor, ceil, current_date, current_timestamp, cast"
ALLOWED = PREDICATES + VALUES + SAFE_FUNCTIONS
QUERIES: tuple[type[exp.Expression], ...] = (exp.Subquery, exp.Select, exp.Union, exp.Exists)


def sqlglot_dialect(sqlalchemy_dialect: str) -> str:
    try:
        return SQLGLOT_DIALECTS[sqlalchemy_dialect]
    except KeyError:
        raise SignalError(f"conditions cannot be checked for the {sqlalchemy_dialect} dialect") from None


def _describe(node: exp.Expression) -> str:
    sql = node.sql()
    return sql if len(sql) <= 60 else sql[:57] + "..."


def check_condition(condition: str, dialect: str, columns: Sequence[str], collection: str) -> str:
    """The condition, stripped, if it is one predicate over ``columns``; else SignalError with the reason.

    ``dialect`` is SQLAlchemy's name for the source (postgresql, mssql, oracle, mysql).
    """
    text = condition.strip()
    if not text:
        raise SignalError(f"the condition for {collection} is empty")
    glot = sqlglot_dialect(dialect)
    _check_tokens(text, glot, collection)
    tree = _one_tree(text, glot, collection)
    _check_root(tree, collection)
    known = {c.lower(): c for c in columns}
    for node in tree.walk():
        _check_node(node, collection)
        if isinstance(node, exp.Column):
            _check_column(node, columns, known, collection)
    return text


def _check_tokens(text: str, glot: str, collection: str) -> None:
    """Refuse before parsing what a parser would quietly accept or drop: comments and a second statement."""
    try:
        tokens = sqlglot.Dialect.get_or_raise(glot).tokenize(text)
    except TokenError:
        # sqlglot's own message quotes the text and is cut at its first quote: name the whole condition
        odd = text.count("'") % 2 or text.count('"') % 2
        hint = ": a quote without its closing one" if odd else ""
        raise SignalError(f"the condition for {collection} is not valid SQL{hint}: {text!r}") from None
    if any(t.comments for t in tokens):
        raise SignalError(f"the condition for {collection} contains a comment: comments are not allowed")
    if any(t.token_type.name == "SEMICOLON" for t in tokens):
        raise SignalError(
            f"the condition for {collection} contains ';': a condition is one predicate, not statements"
        )


def _one_tree(text: str, glot: str, collection: str) -> exp.Expression:
    """The condition's syntax tree: exactly one expression."""
    try:
        trees = sqlglot.parse(text, read=glot)
    except (SqlglotParseError, TokenError) as exc:
        first = str(exc).splitlines()[0]
        raise SignalError(f"the condition for {collection} is not valid {glot} SQL: {first}") from None
    found = [t for t in trees if t is not None]
    if len(found) != 1:
        raise SignalError(
            f"the condition for {collection} must be one predicate, found {len(found)} statements"
        )
    return found[0]


def _check_root(tree: exp.Expression, collection: str) -> None:
    """The whole condition (inside any parentheses) must be a predicate, not a value or a query."""
    root = tree.unnest() if isinstance(tree, exp.Paren) else tree
    _refuse_query(root, collection)
    if not isinstance(root, PREDICATES):
        kind = type(root).__name__.upper()
        raise SignalError(
            f"the condition for {collection} is not a boolean predicate (it is a {kind}: {_describe(root)}); "
            "write a comparison such as status = 'open' AND amount > 10"
        )


def _refuse_query(node: exp.Expression, collection: str) -> None:
    if isinstance(node, QUERIES):
        raise SignalError(f"the condition for {collection} contains a subquery: subqueries are not allowed")


def _check_node(node: exp.Expression, collection: str) -> None:
    """Every node of the tree must be of an allowed kind; a subquery or a function off the list is named."""
    _refuse_query(node, collection)
    if isinstance(node, exp.Func) and not isinstance(node, ALLOWED):
        name = node.sql_name() if not isinstance(node, exp.Anonymous) else str(node.this)
        raise SignalError(
            f"the condition for {collection} calls {name.lower()}(), which is not allowed "
            f"(allowed functions: {SAFE_FUNCTION_NAMES})"
        )
    if not isinstance(node, ALLOWED):
        raise SignalError(
            f"the condition for {collection} contains {type(node).__name__.upper()} "
            f"({_describe(node)}), which is not allowed in a condition"
        )


def _check_column(node: exp.Column, columns: Sequence[str], known: dict[str, str], collection: str) -> None:
    """A bare column of the table: a quoted name must match exactly, an unquoted one in any case (as the
    databases fold it)."""
    if node.table:
        raise SignalError(
            f"the condition for {collection} names {node.sql()}: write bare column names of the table"
        )
    ident = node.this
    name = ident.this if isinstance(ident, exp.Identifier) else str(ident)
    quoted = isinstance(ident, exp.Identifier) and ident.quoted
    if (name not in columns) if quoted else (name.lower() not in known):
        hint = ""
        if not quoted and name.lower() not in known:
            hint = " (a text value must be in single quotes)"
        raise SignalError(
            f"the condition for {collection} names unknown column {name!r}{hint}; "
            f"columns: {', '.join(columns)}"
        )
