"""The embedded engine: Spark SQL over the lakehouse's Delta tables, in this process, without a JVM.

A statement is read as Spark SQL by sqlglot and written out in DuckDB's dialect (backquoted names,
``"text"`` literals, ``offset`` as a column name, Spark's functions and NULL ordering). Each
``database.table`` it names is resolved to its folder (:mod:`pipelines.query.lake`), opened as a
Delta snapshot by delta-rs (``deltalake``), and shown to DuckDB as a view under the same schema
and name; DuckDB pulls Arrow batches from delta-rs' scan of the snapshot, for the columns the
statement can use::

    engine = EmbeddedEngine(LakeTables(cfg.storage.root, cfg.storage.layers()))
    result = engine.execute("SELECT op, count(*) FROM binlog_gold.changes GROUP BY op")
    result.rows()        # [('insert', 271), ...]

A snapshot is a fixed table version read from the Delta log by path: no metastore, no lock, so
a run writing the lake never waits for a reader, nor a reader for a run. Every statement of one
engine sees the version each table had when the statement first named it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import sqlglot
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError as DeltaTableNotFound
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from pipelines.query.lake import LakeTables, TableNotFoundError, delta_storage_options

if TYPE_CHECKING:
    import pyarrow as pa

SPARK_DIALECT = "spark"
DUCKDB_DIALECT = "duckdb"
PATH_DATABASES = frozenset({"delta"})
"""``delta.`<path>``` reads the Delta table at a path, as in Spark."""

DUCKDB_SCHEMAS = frozenset({"main", "temp", "information_schema", "pg_catalog", "system"})
"""Schemas DuckDB itself provides: names in them are left to DuckDB."""

SESSION_TIME_ZONE = "spark.sql.session.timeZone"

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SHOW_DATABASES = re.compile(r"^\s*SHOW\s+(?:DATABASES|SCHEMAS)\s*$", re.IGNORECASE)
_SHOW_TABLES = re.compile(r"^\s*SHOW\s+TABLES(?:\s+(?:IN|FROM)\s+`?(?P<database>[A-Za-z0-9_]+)`?)?\s*$", re.IGNORECASE)

_NO_ROWS = (exp.Create, exp.Drop, exp.Set, exp.Use, exp.Insert, exp.Delete, exp.Update, exp.Alter, exp.Cache)
"""Statements that change the session and return no rows (DuckDB would answer them with a count)."""

logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its warnings would be lines of our output


class StatementError(Exception):
    """A statement that failed: its message is one line, fit to print as it is."""


def one_line(error: BaseException) -> str:
    """The first non-blank line of an error's message, without terminal colour codes."""
    text = _ANSI.sub("", str(error))
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return type(error).__name__


@dataclass(frozen=True)
class Result:
    """A statement's answer: column names and types, and its rows or an Arrow table on demand.

    Fetch one of them only: each call runs the statement's plan again.
    """

    columns: tuple[str, ...]
    types: tuple[str, ...]
    fetch_rows: Callable[[], list[tuple[Any, ...]]]
    fetch_arrow: Callable[[], pa.Table]

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows as Python values (Decimal, datetime, bytes, dict for a struct, list)."""
        return self.fetch_rows()

    def arrow(self) -> pa.Table:
        """The rows as an Arrow table (imports pyarrow)."""
        return self.fetch_arrow()


def split_statements(text: str) -> list[str]:
    """The ``;``-separated statements of ``text``, stripped, empty ones left out.

    A ``;`` inside quotes (``'...'``, ``"..."``, ```...```, with backslash escapes in the first
    two, as Spark reads them) or a comment (``-- ...``, ``/* ... */``) does not separate::

        >>> split_statements("SELECT ';' AS s; -- the end;\\nSELECT 2;")
        ["SELECT ';' AS s", '-- the end;\\nSELECT 2']
    """
    statements: list[str] = []
    start = pos = 0
    length = len(text)
    while pos < length:
        char = text[pos]
        if char in "'\"`":
            pos = _closing_quote(text, pos)
        elif text.startswith("--", pos):
            end = text.find("\n", pos)
            pos = length if end < 0 else end
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            pos = length if end < 0 else end + 1
        elif char == ";":
            statements.append(text[start:pos])
            start = pos + 1
        pos += 1
    statements.append(text[start:])
    return [statement.strip() for statement in statements if _has_code(statement)]


def _closing_quote(text: str, pos: int) -> int:
    """Position of the quote closing the one at ``pos`` (the end of ``text`` when unclosed)."""
    quote = text[pos]
    pos += 1
    while pos < len(text):
        if text[pos] == "\\" and quote != "`":
            pos += 2
            continue
        if text[pos] == quote:
            return pos
        pos += 1
    return len(text)


def _has_code(statement: str) -> bool:
    """True when ``statement`` holds more than blanks and comments."""
    without_block = re.sub(r"/\*.*?\*/", " ", statement, flags=re.DOTALL)
    without_line = re.sub(r"--[^\n]*", " ", without_block)
    return bool(without_line.strip())


@dataclass(frozen=True)
class _TableName:
    """A table a statement names: ``database.name`` (lower-cased) or a path under ``delta``."""

    database: str
    name: str


def referenced_tables(tree: exp.Expr) -> list[_TableName]:
    """The qualified table names a parsed statement reads (CTE names and unqualified names left out)."""
    found: dict[_TableName, None] = {}
    for table in tree.find_all(exp.Table):
        if not table.db or not table.name:
            continue
        database = table.db if table.db.lower() in PATH_DATABASES else table.db.lower()
        name = table.name if database in PATH_DATABASES else table.name.lower()
        found[_TableName(database, name)] = None
    return list(found)


def used_names(tree: exp.Expr) -> set[str] | None:
    """Every identifier of the statement, lower-cased: a superset of the columns it reads.

    None when it may read columns it does not name: a ``*`` (other than in ``count(*)``), a
    NATURAL join, a PIVOT (it groups by the columns it does not name), or DESCRIBE. Struct fields,
    aliases and table names are identifiers too: reading a column more than needed is only a
    cost, never a wrong answer.
    """
    for star in tree.find_all(exp.Star):
        if not isinstance(star.parent, exp.Count):
            return None
    if isinstance(tree, exp.Describe) or tree.find(exp.Pivot) is not None:
        return None
    for join in tree.find_all(exp.Join):
        if (join.args.get("method") or "").upper() == "NATURAL":
            return None
    return {identifier.name.lower() for identifier in tree.find_all(exp.Identifier)}


def spark_semantics(tree: exp.Expr) -> exp.Expr:
    """Marks on the parsed tree for what Spark's functions mean that the generic tree does not say.

    ``length`` also counts the bytes of a binary value in Spark: marked so, sqlglot writes DuckDB a
    test of the argument's type (``OCTET_LENGTH`` for BLOB, ``LENGTH`` for text).
    """
    for length in tree.find_all(exp.Length):
        length.set("binary", True)
    return tree


class _DeltaScan:
    """An Arrow stream source DuckDB can scan any number of times: each scan is a new delta-rs scan."""

    def __init__(self, table: DeltaTable, columns: list[str]) -> None:
        self.table = table
        self.columns = columns

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """A fresh stream of the snapshot's rows, for ``columns``."""
        return self.table.scan(columns=self.columns).__arrow_c_stream__(requested_schema)


class EmbeddedEngine:
    """Runs Spark SQL statements with DuckDB over Delta snapshots read by delta-rs.

    ``hadoop`` holds the configuration's Hadoop settings, translated for delta-rs per table path
    (:func:`pipelines.query.lake.delta_storage_options`) on object stores; ``time_zone`` is the session time zone
    in which timestamp literals are read and timestamps shown (Spark's
    ``spark.sql.session.timeZone``; None: the machine's, as Spark's default).
    """

    def __init__(
        self,
        lake: LakeTables,
        *,
        hadoop: Mapping[str, str] | None = None,
        time_zone: str | None = None,
    ) -> None:
        self.lake = lake
        self.hadoop = dict(hadoop or {})
        self.connection = duckdb.connect(
            config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}
        )
        if time_zone:
            self.connection.execute(f"SET TimeZone = {_literal(time_zone)}")
        self._snapshots: dict[_TableName, DeltaTable] = {}
        self._columns: dict[_TableName, set[str]] = {}
        self._schemas: set[str] = set()
        self._sources = 0

    def execute(self, statement: str) -> Result | None:
        """Run one Spark SQL statement; its result, or None for a statement that returns none.

        Raises ``StatementError`` (one line) when the statement cannot be parsed, names a table the
        lakehouse does not hold, or fails in DuckDB or delta-rs.
        """
        listing = self._catalog_command(statement)
        if listing is not None:
            return listing
        try:
            tree = sqlglot.parse_one(statement, read=SPARK_DIALECT)
        except SqlglotError as exc:
            raise StatementError(f"cannot parse the statement as Spark SQL: {one_line(exc)}") from None
        tree = spark_semantics(tree)
        names = used_names(tree)
        try:
            for table in referenced_tables(tree):
                self._expose(table, names)
        except TableNotFoundError as exc:
            raise StatementError(str(exc)) from None
        try:
            translated = tree.sql(dialect=DUCKDB_DIALECT, unsupported_level=ErrorLevel.RAISE)
        except SqlglotError as exc:
            raise StatementError(f"the embedded engine cannot run this statement: {one_line(exc)}") from None
        try:
            if isinstance(tree, _NO_ROWS):
                self.connection.execute(translated)
                return None
            relation = self.connection.sql(translated)
        except duckdb.Error as exc:
            raise StatementError(one_line(exc)) from None
        if relation is None:
            return None
        return Result(
            columns=tuple(relation.columns),
            types=tuple(str(kind) for kind in relation.types),
            fetch_rows=_guarded(relation.fetchall),
            fetch_arrow=_guarded(relation.to_arrow_table),
        )

    def _catalog_command(self, statement: str) -> Result | None:
        """``SHOW DATABASES`` and ``SHOW TABLES [IN db]`` answered from the lakehouse, as Spark lists them.

        Without a database, ``SHOW TABLES`` lists every database's tables (Spark's current database,
        ``default``, holds none of them). Tables are listed on local roots only.
        """
        if _SHOW_DATABASES.match(statement):
            # as Spark lists them: a database exists once a table of it was written (local roots tell)
            rows: list[tuple[Any, ...]] = [
                (database,) for database in sorted(self.lake.databases) if self.lake.local_tables(database) != []
            ]
            return _listed(("namespace",), ("VARCHAR",), rows)
        shown = _SHOW_TABLES.match(statement)
        if shown is None:
            return None
        wanted = shown["database"]
        databases = [wanted.lower()] if wanted else sorted(self.lake.databases)
        rows = []
        for database in databases:
            if database not in self.lake.databases:
                raise StatementError(f"no database {database} in this lakehouse")
            names = self.lake.local_tables(database)
            if names is None:
                raise StatementError("SHOW TABLES lists a local lakehouse only: use --engine spark for this root")
            rows += [(database, name, False) for name in names]
        return _listed(("namespace", "tableName", "isTemporary"), ("VARCHAR", "VARCHAR", "BOOLEAN"), rows)

    def _expose(self, table: _TableName, names: set[str] | None) -> None:
        """Make ``table`` a DuckDB view over its Delta snapshot with the columns ``names`` can use."""
        if table.database in DUCKDB_SCHEMAS:
            return
        snapshot = self._snapshot(table)
        fields = [field.name for field in snapshot.schema().fields]
        wanted = self._columns.setdefault(table, set())
        before = set(wanted)
        wanted.update(fields if names is None else (f for f in fields if f.lower() in names))
        if not wanted:
            wanted.add(fields[0])  # count(*) still needs the row count of some column
        if wanted == before:
            return
        columns = [field for field in fields if field in wanted]
        self._sources += 1
        source = f"__delta_scan_{self._sources}"
        self.connection.register(source, _DeltaScan(snapshot, columns))
        if table.database not in self._schemas:
            self.connection.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(table.database)}")
            self._schemas.add(table.database)
        self.connection.execute(
            f"CREATE OR REPLACE VIEW {_quote(table.database)}.{_quote(table.name)} AS SELECT * FROM {_quote(source)}"
        )

    def _snapshot(self, table: _TableName) -> DeltaTable:
        """The Delta snapshot of ``table``, opened once per engine."""
        snapshot = self._snapshots.get(table)
        if snapshot is not None:
            return snapshot
        paths = [table.name] if table.database in PATH_DATABASES else self.lake.candidates(table.database, table.name)
        for path in paths:
            try:
                snapshot = DeltaTable(path, storage_options=delta_storage_options(path, self.hadoop) or None)
            except DeltaTableNotFound:
                continue
            except Exception as exc:  # delta-rs raises OSError, DeltaError, DeltaProtocolError, ...
                raise StatementError(f"{table.database}.{table.name}: cannot read {path}: {one_line(exc)}") from None
            self._snapshots[table] = snapshot
            return snapshot
        if table.database in PATH_DATABASES:
            raise TableNotFoundError(f"delta.`{table.name}`: no Delta table at this path")
        raise self.lake.not_found(table.database, table.name)


def _listed(columns: tuple[str, ...], types: tuple[str, ...], rows: list[tuple[Any, ...]]) -> Result:
    """A result computed here, not by DuckDB."""

    def arrow() -> pa.Table:
        import pyarrow as pa  # noqa: PLC0415

        return pa.Table.from_pylist([dict(zip(columns, row, strict=True)) for row in rows])

    return Result(columns=columns, types=types, fetch_rows=lambda: rows, fetch_arrow=arrow)


def _guarded(fetch: Callable[[], Any]) -> Callable[[], Any]:
    """``fetch`` with DuckDB's and delta-rs' errors raised as one-line ``StatementError``."""

    def run() -> Any:
        try:
            return fetch()
        except (duckdb.Error, OSError, ValueError) as exc:
            raise StatementError(one_line(exc)) from None

    return run


def _literal(text: str) -> str:
    """A DuckDB string literal."""
    return "'" + text.replace("'", "''") + "'"


def _quote(identifier: str) -> str:
    """A DuckDB identifier in double quotes."""
    return '"' + identifier.replace('"', '""') + '"'


def session_time_zone(spark_conf: Mapping[str, object]) -> str | None:
    """The session time zone the configuration gives Spark (None: the machine's)."""
    value = spark_conf.get(SESSION_TIME_ZONE)
    return str(value) if value else None
