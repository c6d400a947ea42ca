"""``binlog-lakehouse sql --engine spark``: the same statements through a Spark session and its catalog.

The result comes back as Arrow (``DataFrame.toArrow``), so it prints exactly as the embedded
engine's does. Imported only when that engine is asked for: it loads pyspark.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import sqlglot
from pyspark.errors import PySparkException
from pyspark.logger import PySparkLogger
from pyspark.sql import SparkSession
from sqlglot import exp
from sqlglot.errors import SqlglotError

from pipelines.query.engine import PATH_DATABASES, SPARK_DIALECT, Result, StatementError, one_line
from pipelines.query.lake import LakeTables, TableNotFoundError

METASTORE_UNAVAILABLE = "Unable to instantiate org.apache.hadoop.hive.ql.metadata.SessionHiveMetaStoreClient"
QUERY_CONTEXT_LOGGER = "SQLQueryContextLogger"
"""pyspark logs a failing statement's error as a JSON record on stderr; the command prints it as one line."""


def arrow_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows of an Arrow table as tuples of Python values (repeated column names kept)."""
    columns = [column.to_pylist() for column in table.columns]
    return list(zip(*columns, strict=True)) if columns else []


def by_path(statement: str, lake: LakeTables, is_table: Callable[[str], bool]) -> str:
    """``statement`` with each lakehouse table it names read from its folder: ``delta.`<path>```.

    For a lakehouse whose tables are not registered in the catalog (``storage.register_tables:
    false``): ``binlog_gold.changes`` becomes ``delta.`<root>/gold/changes` AS changes``, the
    name kept as the alias so that qualified columns still resolve. ``is_table(path)`` tells
    whether a Delta table is stored there (a database shared by two layers has two candidate
    folders). Names outside the lakehouse's databases are left to the catalog; a statement that
    does not parse is returned as it is, for Spark to report.

    >>> by_path("SELECT * FROM binlog_gold.changes", LakeTables("/lake", {"gold": "binlog_gold"}), bool)
    'SELECT * FROM delta.`/lake/gold/changes` AS changes'
    """
    try:
        tree = sqlglot.parse_one(statement, read=SPARK_DIALECT)
    except SqlglotError:
        return statement
    databases = lake.databases
    changed = False
    for table in list(tree.find_all(exp.Table)):
        if not table.db or table.args.get("catalog") or table.db.lower() not in databases:
            continue
        try:
            paths = [path for path in lake.candidates(table.db, table.name) if is_table(path)]
        except TableNotFoundError as exc:
            raise StatementError(str(exc)) from None
        if not paths:
            raise StatementError(str(lake.not_found(table.db, table.name)))
        if table.alias == "":
            table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
        table.set("db", exp.to_identifier(next(iter(PATH_DATABASES))))
        table.set("this", exp.to_identifier(paths[0], quoted=True))
        changed = True
    return tree.sql(dialect=SPARK_DIALECT) if changed else statement


def delta_table_at(spark: SparkSession, path: str) -> bool:
    """Whether a Delta table is stored at ``path``."""
    from delta.tables import DeltaTable  # noqa: PLC0415

    return bool(DeltaTable.isDeltaTable(spark, path))


def spark_result(spark: SparkSession, statement: str, metastore_dir: str | None = None) -> Result:
    """Run ``statement`` in ``spark``; a failure is a one-line ``StatementError``.

    With an embedded Derby metastore (``metastore_dir``) that another session holds, the message
    says so.
    """
    PySparkLogger.getLogger(QUERY_CONTEXT_LOGGER).disabled = True
    try:
        table = spark.sql(statement).toArrow()
    except PySparkException as exc:
        message = one_line(exc)
        if METASTORE_UNAVAILABLE in str(exc) and metastore_dir is not None:
            message += (
                f" (the Derby metastore in {metastore_dir} admits one session at a time: another one, a run "
                "or a notebook, holds it; the default engine reads the tables without it)"
            )
        raise StatementError(message) from None
    return Result(
        columns=tuple(table.column_names),
        types=tuple(str(field.type) for field in table.schema),
        fetch_rows=lambda: arrow_rows(table),
        fetch_arrow=lambda: table,
    )
