"""TABLE_MAP columns completed with what the schema history knows about them (no Spark here).

A file written with ``binlog_row_metadata=MINIMAL`` or ``NO_LOG`` leaves open what the row bytes
mean: column names, signedness of integers, ENUM/SET labels, and the character set of text (or
whether a CHAR is really a BINARY).  Silver resolves, for every map, the column list of the
schema history in force there (DDL replay, a seed snapshot, or maps of the same table written
with full metadata); :func:`completed_columns` fills in, column by column, only what the map
does not say, and only where the history's type agrees with the map's wire type::

    columns = completed_columns(table_map.columns, history_columns)
    # LONGLONG without signedness + "bigint unsigned"       -> unsigned=True
    # ENUM without labels          + "enum('new','paid')"   -> enum_values=("new", "paid")
    # STRING without a charset     + "binary(16)" / "inet6" -> collation binary: bytes, zero-padded
    # VARCHAR without a charset    + "varchar(20)", latin1  -> collation of latin1

What the map carries always wins, so a FULL-metadata map comes out unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import sqlglot
from sqlglot import TokenType
from sqlglot.errors import TokenError

from binlog_core.charsets import BINARY_COLLATION, collation_id_of
from binlog_core.constants import ColumnType
from binlog_core.table_map import Column
from pipelines.gold.types import TEXT_OR_BINARY

_NUMBERS = {
    "tinyint": {ColumnType.TINY},
    "bool": {ColumnType.TINY},
    "boolean": {ColumnType.TINY},
    "smallint": {ColumnType.SHORT},
    "mediumint": {ColumnType.INT24},
    "int": {ColumnType.LONG},
    "integer": {ColumnType.LONG},
    "bigint": {ColumnType.LONGLONG},
    "decimal": {ColumnType.NEWDECIMAL, ColumnType.DECIMAL},
    "numeric": {ColumnType.NEWDECIMAL, ColumnType.DECIMAL},
    "dec": {ColumnType.NEWDECIMAL, ColumnType.DECIMAL},
    "fixed": {ColumnType.NEWDECIMAL, ColumnType.DECIMAL},
    "float": {ColumnType.FLOAT, ColumnType.DOUBLE},
    "double": {ColumnType.DOUBLE},
    "real": {ColumnType.DOUBLE},
}
"""DDL type words whose columns may be UNSIGNED, and the wire types they are written as."""

_TEXT_WORDS = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "json"})
_BINARY_WORDS = frozenset(
    {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "inet4", "inet6", "uuid"}
)
"""Types stored as bytes: BINARY(n), INET6 and UUID are written as STRING with trailing zeros stripped."""

_LABELS = {"enum": (ColumnType.ENUM, "enum_values"), "set": (ColumnType.SET, "set_values")}


def _tokens(type_text: str) -> list[Any]:
    try:
        return list(sqlglot.tokenize(type_text, read="mysql"))
    except TokenError:
        return []


def _completed(column: Column, spec: Mapping[str, Any]) -> Column:
    """One column with what ``spec`` (a schema-history column) adds to it."""
    changes: dict[str, Any] = {}
    if column.name is None and spec.get("name"):
        changes["name"] = spec["name"]
    tokens = _tokens(spec.get("type") or "")
    word = tokens[0].text.lower() if tokens else ""
    if word in _NUMBERS and column.type in _NUMBERS[word] and column.unsigned is None:
        later = {t.text.lower() for t in tokens[1:]}
        changes["unsigned"] = "unsigned" in later or "zerofill" in later
    elif word in _LABELS and column.type == _LABELS[word][0]:
        field = _LABELS[word][1]
        if getattr(column, field) is None:
            changes[field] = tuple(t.text for t in tokens if t.token_type == TokenType.STRING)
    elif column.type in TEXT_OR_BINARY and column.collation is None:
        if word in _BINARY_WORDS or spec.get("charset") == "binary":
            changes["collation"] = BINARY_COLLATION
        elif word in _TEXT_WORDS:
            found = collation_id_of(spec.get("collation"), spec.get("charset"))
            if found is not None:
                changes["collation"] = found
    return replace(column, **changes) if changes else column


def completed_columns(columns: Sequence[Column], history: Sequence[Mapping[str, Any]] | None) -> tuple[Column, ...]:
    """The map's columns with names, signedness, labels and charsets the ``history`` columns add.

    ``history``: the schema-history columns (``name, type, charset, collation``) in force at the
    map, one per map column; None (or another count) leaves the columns as they are.
    """
    if history is None or len(history) != len(columns):
        return tuple(columns)
    return tuple(_completed(column, spec) for column, spec in zip(columns, history, strict=True))


__all__ = ["completed_columns"]
