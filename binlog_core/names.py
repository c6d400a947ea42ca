"""Column names for TABLE_MAPs that carry none, from what the files showed earlier.

A server with ``binlog_row_metadata=FULL`` writes column names, signedness, charsets, ENUM/SET
labels and the primary key into every TABLE_MAP; with MINIMAL or NO_LOG it writes none of them,
and a SQL statement cannot name the columns.  :class:`ColumnNames` follows the files of a run
in order and remembers, per table, the last FULL TABLE_MAP, carried through the ``ALTER TABLE``
statements logged after it (parsed with sqlglot's MySQL dialect).  A later map of the table
without names is completed from it when the two agree column by column:

* a column no DDL has touched since the FULL map must have the same type, metadata and
  nullability; it takes everything the FULL map said of it (name, signedness, charset, labels);
* a column an ALTER added or redefined (ADD, MODIFY, CHANGE) takes its name from the statement,
  its signedness from the declared type (``INT UNSIGNED``), and must be of the declared type's
  family (``varchar`` -> VARCHAR, ...); its charset stays unknown (its text is written as the
  bytes it holds);
* the primary key is the FULL map's, its columns followed through renames and moves.

The rows are then decoded again with the completed map (values exactly as with FULL metadata).
Everything that could change the columns in a way not followed makes the table unknown again:
an ALTER action other than ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, index and option changes,
``CONVERT TO CHARACTER SET``, ``CREATE``/``DROP``/``RENAME TABLE``, ``DROP DATABASE``, a DDL
statement sqlglot cannot parse (then every table), and a file that does not follow the one
before it (its ROTATE names another file).  What is unknown stays unknown: the caller refuses.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from binlog_core.columns import DecodeOptions
from binlog_core.constants import ColumnType
from binlog_core.decoder import DecodedEvent, RowChange
from binlog_core.errors import BinlogError
from binlog_core.events.control import RotateEvent, StopEvent
from binlog_core.events.query import QueryEvent, StatementKind
from binlog_core.rows import RowsEvent, TablePlan, decode_rows
from binlog_core.table_map import (
    BLOB_COMPRESSED,
    NUMERIC_TYPES,
    VARCHAR_COMPRESSED,
    Column,
    TableMap,
    shape_fingerprint,
)

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # "falling back to a Command": handled here

TableKey = tuple[str, str]

_BLOBS: Final = frozenset(
    {ColumnType.BLOB, ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB, BLOB_COMPRESSED}
)
_VARCHARS: Final = frozenset({ColumnType.VARCHAR, ColumnType.VAR_STRING, VARCHAR_COMPRESSED})

DECLARED_TYPES: Final[dict[str, frozenset[int]]] = {
    "tinyint": frozenset({ColumnType.TINY}),
    "bool": frozenset({ColumnType.TINY}),
    "boolean": frozenset({ColumnType.TINY}),
    "smallint": frozenset({ColumnType.SHORT}),
    "mediumint": frozenset({ColumnType.INT24}),
    "int": frozenset({ColumnType.LONG}),
    "integer": frozenset({ColumnType.LONG}),
    "bigint": frozenset({ColumnType.LONGLONG}),
    "decimal": frozenset({ColumnType.NEWDECIMAL}),
    "numeric": frozenset({ColumnType.NEWDECIMAL}),
    "float": frozenset({ColumnType.FLOAT}),
    "double": frozenset({ColumnType.DOUBLE}),
    "real": frozenset({ColumnType.DOUBLE}),
    "bit": frozenset({ColumnType.BIT}),
    "year": frozenset({ColumnType.YEAR}),
    "date": frozenset({ColumnType.DATE, ColumnType.NEWDATE}),
    "time": frozenset({ColumnType.TIME, ColumnType.TIME2}),
    "datetime": frozenset({ColumnType.DATETIME, ColumnType.DATETIME2}),
    "timestamp": frozenset({ColumnType.TIMESTAMP, ColumnType.TIMESTAMP2}),
    "char": frozenset({ColumnType.STRING}),
    "binary": frozenset({ColumnType.STRING}),
    "varchar": _VARCHARS,
    "varbinary": _VARCHARS,
    **dict.fromkeys(
        ("tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob", "longblob"), _BLOBS
    ),
    "json": frozenset({ColumnType.JSON, *_BLOBS}),  # MySQL's binary JSON; MariaDB's LONGTEXT
    "enum": frozenset({ColumnType.ENUM}),
    "set": frozenset({ColumnType.SET}),
    **dict.fromkeys(
        (
            "geometry",
            "point",
            "linestring",
            "polygon",
            "multipoint",
            "multilinestring",
            "multipolygon",
            "geometrycollection",
        ),
        frozenset({ColumnType.GEOMETRY}),
    ),
}
"""A declared type's first word -> the TABLE_MAP types a column of it can have."""

_TYPE_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True, slots=True)
class _KnownColumn:
    """One column as far as it is known: from a FULL map (``full``) or declared by DDL since."""

    name: str
    full: Column | None
    declared: str | None = None  # the type text of the DDL that (re)defined it, lowercase


@dataclass(frozen=True, slots=True)
class _Known:
    """A table's columns in order, and which of them form the primary key."""

    columns: tuple[_KnownColumn, ...]
    primary_key: tuple[str, ...]  # column names
    source: TableMap  # the FULL map it started from


class _Unfollowed(Exception):
    """A DDL action whose effect on the columns is not followed."""


def _same_shape(a: Column, b: Column) -> bool:
    return (a.type, a.meta, a.nullable) == (b.type, b.meta, b.nullable)


def _declared_fits(declared: str, column: Column) -> bool:
    word = _TYPE_WORD.match(declared)
    families = DECLARED_TYPES.get(word.group() if word else "")
    return families is not None and column.type in families


def _position(definition: exp.Expression) -> tuple[str, str | None] | None:
    """``("FIRST", None)``, ``("AFTER", name)`` or None for a column definition."""
    position = definition.args.get("position")
    if position is None:
        return None
    text = position.sql(dialect="mysql") if isinstance(position, exp.Expression) else str(position)
    words = text.split(None, 1)
    if words[0].upper() == "FIRST":
        return ("FIRST", None)
    if len(words) == 2:
        return ("AFTER", words[1].strip("`"))
    raise _Unfollowed(f"column position {text!r}")


def _index(columns: list[_KnownColumn], name: str) -> int:
    for i, column in enumerate(columns):
        if column.name.lower() == name.lower():
            return i
    raise _Unfollowed(f"no column {name!r}")


def _place(columns: list[_KnownColumn], column: _KnownColumn, position: tuple[str, str | None] | None) -> None:
    if position is None:
        columns.append(column)
    elif position[0] == "FIRST":
        columns.insert(0, column)
    else:
        columns.insert(_index(columns, position[1] or "") + 1, column)


def _declared_type(definition: exp.Expression) -> str:
    kind = definition.args.get("kind")
    if not isinstance(kind, exp.DataType):
        raise _Unfollowed(f"column {definition.name} without a type")
    return kind.sql(dialect="mysql").lower()


_Columns = list[_KnownColumn]
_Key = list[str]


def _add_column(columns: _Columns, key: _Key, action: exp.Expression) -> None:
    """``ADD [COLUMN] [IF NOT EXISTS] c type [FIRST | AFTER x]``."""
    if action.args.get("exists") and any(c.name.lower() == action.name.lower() for c in columns):
        return
    _place(columns, _KnownColumn(action.name, None, _declared_type(action)), _position(action))


def _drop_column(columns: _Columns, key: _Key, action: exp.Expression) -> None:
    """``DROP [COLUMN] [IF EXISTS] c``; dropping a key column changes the key: not followed."""
    if (action.args.get("kind") or "").upper() != "COLUMN":
        raise _Unfollowed(f"ALTER TABLE action {action.sql(dialect='mysql')!r}")
    for dropped in action.args.get("tables") or [action.this]:
        if action.args.get("exists") and not any(c.name.lower() == dropped.name.lower() for c in columns):
            continue
        gone = columns.pop(_index(columns, dropped.name))
        if any(k.lower() == gone.name.lower() for k in key):
            raise _Unfollowed("a primary key column is dropped")


def _modify_column(columns: _Columns, key: _Key, action: exp.Expression) -> None:
    """``MODIFY c type`` / ``CHANGE old new type``, with an optional FIRST/AFTER."""
    definition = action.this
    old = action.args.get("rename_from")
    old_name = old.name if isinstance(old, exp.Expression) else (old or definition.name)
    index = _index(columns, old_name)
    columns.pop(index)
    new = _KnownColumn(definition.name, None, _declared_type(definition))
    position = _position(definition)
    if position is None:
        columns.insert(index, new)
    else:
        _place(columns, new, position)
    key[:] = [definition.name if k.lower() == old_name.lower() else k for k in key]


def _rename_column(columns: _Columns, key: _Key, action: exp.Expression) -> None:
    """``RENAME COLUMN a TO b``: everything else about the column stays."""
    index = _index(columns, action.this.name)
    old = columns[index]
    to = action.args["to"].name
    columns[index] = _KnownColumn(to, None if old.full is None else replace(old.full, name=to), old.declared)
    key[:] = [to if k.lower() == old.name.lower() else k for k in key]


def _same_columns(columns: _Columns, key: _Key, action: exp.Expression) -> None:
    """``ALTER [COLUMN] c SET/DROP DEFAULT``: the stored values keep their shape."""


ALTER_ACTIONS: Final[dict[type[exp.Expression], Callable[[_Columns, _Key, exp.Expression], None]]] = {
    exp.ColumnDef: _add_column,
    exp.Drop: _drop_column,
    exp.ModifyColumn: _modify_column,
    exp.RenameColumn: _rename_column,
    exp.AlterColumn: _same_columns,
}
"""sqlglot's ALTER TABLE action -> its effect on the known columns; other actions are not followed."""


def _alter(known: _Known, actions: Sequence[exp.Expression]) -> _Known:
    """The columns after the ALTER TABLE actions (raises :class:`_Unfollowed`)."""
    columns = list(known.columns)
    key = list(known.primary_key)
    for action in actions:
        follow = ALTER_ACTIONS.get(type(action))
        if follow is None:
            raise _Unfollowed(f"ALTER TABLE action {action.sql(dialect='mysql')!r}")
        follow(columns, key, action)
    return _Known(tuple(columns), tuple(key), known.source)


class ColumnNames:
    """Completes the TABLE_MAPs of later events from what earlier ones said (see the module doc).

    Call :meth:`begin_file` before each file and :meth:`observe` with every decoded event, in
    order; :meth:`observe` returns the event's row changes, decoded again with a completed map
    when its own carries no names and the table is known (else the decoder's, unchanged).
    """

    def __init__(self, options: DecodeOptions | None = None) -> None:
        self.options = options or DecodeOptions()
        self.known: dict[TableKey, _Known] = {}
        self._next_file: str | None = None  # what the last file's ROTATE named
        self._plans: dict[tuple[int, str], tuple[TableMap, TablePlan]] = {}

    def begin_file(self, name: str) -> None:
        """The events that follow are of the file ``name``; a break in the sequence forgets everything."""
        if self._next_file is not None and self._next_file != name:
            self.known.clear()
        self._next_file = None
        self._plans.clear()

    def observe(self, item: DecodedEvent) -> Sequence[RowChange] | BinlogError:
        """Learn from ``item``; its row changes, with names where they can be known.

        A :class:`~binlog_core.errors.BinlogError` is returned (not raised) when decoding the rows
        again with the completed map fails: the map and the table disagree, so nothing is known.
        """
        body = item.body
        if isinstance(body, TableMap):
            if body.has_names:
                key = (body.schema, body.table)
                self.known[key] = _Known(
                    tuple(_KnownColumn(c.name or "", c) for c in body.columns),
                    tuple(body.columns[i].name or "" for i in body.primary_key),
                    body,
                )
            return item.rows
        if isinstance(body, RowsEvent):
            return self._complete(item, body)
        if isinstance(body, QueryEvent) and body.kind == StatementKind.DDL:
            self._ddl(body)
        elif isinstance(body, RotateEvent) and item.event.inner_index is None and item.event.offset > 4:
            self._next_file = body.next_file
        elif isinstance(body, StopEvent):
            self._next_file = None
        return item.rows

    # -- rows ----------------------------------------------------------------------------

    def completed(self, table_map: TableMap) -> TableMap | None:
        """``table_map`` with the names (and metadata) known for its table, or ``None``."""
        known = self.known.get((table_map.schema, table_map.table))
        if known is None or len(known.columns) != len(table_map.columns):
            return None
        columns: list[Column] = []
        for column, learned in zip(table_map.columns, known.columns, strict=True):
            if learned.full is not None:
                if not _same_shape(learned.full, column):
                    return None
                columns.append(replace(learned.full, index=column.index, wire_type=column.wire_type))
            elif learned.declared is not None and _declared_fits(learned.declared, column):
                unsigned = (" unsigned" in learned.declared) if column.type in NUMERIC_TYPES else column.unsigned
                columns.append(replace(column, name=learned.name, unsigned=unsigned))
            else:
                return None
        names = [c.name or "" for c in columns]
        lowered = [n.lower() for n in names]
        try:
            primary_key = tuple(lowered.index(k.lower()) for k in known.primary_key)
        except ValueError:
            return None
        columns = [replace(c, primary_key_prefix=None) if i not in primary_key else c for i, c in enumerate(columns)]
        done = replace(
            table_map,
            columns=tuple(columns),
            primary_key=primary_key,
            optional_fields=known.source.optional_fields,
        )
        return replace(done, fingerprint=shape_fingerprint(done))

    def _complete(self, item: DecodedEvent, body: RowsEvent) -> Sequence[RowChange] | BinlogError:
        rows = item.rows
        if not rows or rows[0].table_map.has_names:
            return rows
        table_map = rows[0].table_map
        cache_key = (table_map.table_id, table_map.fingerprint)
        cached = self._plans.get(cache_key)
        if cached is None:
            completed = self.completed(table_map)
            if completed is None:
                return rows
            cached = self._plans[cache_key] = (completed, TablePlan(completed, self.options, item.event.fde))
        completed, plan = cached
        problems: list[BinlogError] = []
        try:
            pairs = decode_rows(body, plan, problems)
        except BinlogError as exc:
            return item.event.locate(exc)
        errors = [p for p in problems if p.severity == "error"]
        if errors:
            return item.event.locate(errors[0])
        first = rows[0]
        return [
            RowChange(
                first.file,
                first.offset,
                first.inner_index,
                index,
                first.event_type,
                first.gtid,
                first.timestamp,
                first.server_id,
                completed,
                first.op,
                before,
                after,
            )
            for index, (before, after) in enumerate(pairs)
        ]

    # -- DDL -----------------------------------------------------------------------------

    def _forget(self, schema: str | None, table: str) -> None:
        for key in [k for k in self.known if k[1].lower() == table.lower() and (schema is None or k[0] == schema)]:
            del self.known[key]

    def _ddl(self, query: QueryEvent) -> None:
        statement = query.statement
        if not isinstance(statement, str):
            self.known.clear()
            return
        try:
            parsed = sqlglot.parse_one(statement, read="mysql")
        except (ParseError, TokenError):
            self.known.clear()
            return
        if not isinstance(parsed, exp.Expression):
            self.known.clear()
            return
        follow = DDL_STATEMENTS.get(type(parsed), ColumnNames._not_followed)
        follow(self, parsed, query.schema or None)

    def _not_followed(self, _parsed: exp.Expression, _default: str | None) -> None:
        """RENAME TABLE, ALTER TABLE ... CONVERT TO CHARACTER SET, ...: forget every table."""
        self.known.clear()

    def _unchanged(self, _parsed: exp.Expression, _default: str | None) -> None:
        """TRUNCATE: the columns stay."""

    def _create(self, parsed: exp.Expression, default: str | None) -> None:
        kind = (parsed.args.get("kind") or "").upper()
        if kind in _HARMLESS_CREATE:
            return
        target = parsed.this
        table = target.this if isinstance(target, exp.Schema) else target
        if kind in ("TABLE", "SEQUENCE") and isinstance(table, exp.Table):
            self._forget(table.db or default, table.name)
        else:
            self.known.clear()

    def _alter(self, parsed: exp.Expression, default: str | None) -> None:
        if (parsed.args.get("kind") or "").upper() != "TABLE":
            return  # ALTER DATABASE, VIEW, ...
        table = parsed.this
        schema = table.db or default
        key = next((k for k in self.known if k[0] == schema and k[1].lower() == table.name.lower()), None)
        if key is None:
            return  # not known: nothing to follow
        options = " ".join(o.sql(dialect="mysql").upper() for o in parsed.args.get("options") or [])
        try:
            if "CHARACTER SET" in options or "COLLATE" in options:
                raise _Unfollowed("table charset change")
            updated = _alter(self.known[key], parsed.args.get("actions") or [])
        except _Unfollowed:
            del self.known[key]
            return
        self.known[key] = updated

    def _drop(self, parsed: exp.Expression, default: str | None) -> None:
        kind = (parsed.args.get("kind") or "").upper()
        if kind in ("DATABASE", "SCHEMA"):
            target = parsed.this
            name = target.name if isinstance(target, exp.Expression) else ""
            for key in [k for k in self.known if k[0].lower() == name.lower()]:
                del self.known[key]
        elif kind in ("TABLE", "SEQUENCE", "INDEX"):
            tables = parsed.args.get("tables") or [parsed.this]
            if kind == "INDEX":
                tables = [parsed.args.get("cluster") or parsed.args.get("table")]
            if not all(isinstance(t, exp.Table) for t in tables):
                self.known.clear()
                return
            for table in tables:
                self._forget(table.db or default, table.name)
        elif kind not in _HARMLESS_CREATE:
            self.known.clear()


DDL_STATEMENTS: Final[dict[type[exp.Expression], Callable[[ColumnNames, exp.Expression, str | None], None]]] = {
    exp.Alter: ColumnNames._alter,
    exp.Create: ColumnNames._create,
    exp.Drop: ColumnNames._drop,
    exp.TruncateTable: ColumnNames._unchanged,
}
"""sqlglot's statement -> how it changes the known tables (given the statement's default database);
any other DDL forgets every table."""

_HARMLESS_CREATE: Final = frozenset(
    {"VIEW", "INDEX", "FUNCTION", "PROCEDURE", "TRIGGER", "EVENT", "USER", "ROLE", "DATABASE", "SCHEMA", "SERVER"}
)
"""CREATE/DROP of objects that are not a table's columns (an index leaves the row images as they are)."""


__all__ = ["ALTER_ACTIONS", "DDL_STATEMENTS", "DECLARED_TYPES", "ColumnNames"]
