"""``binlog-lakehouse sql --engine spark``: the same statements through a Spark session and its catalog.

The result comes back as Arrow (``DataFrame.toArrow``), so it prints exactly as the embedded
engine's does. Imported only when that engine is asked for: it loads pyspark.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.logger import PySparkLogger
from pyspark.sql import SparkSession

from pipelines.query.engine import Result, StatementError, one_line

METASTORE_UNAVAILABLE = "Unable to instantiate org.apache.hadoop.hive.ql.metadata.SessionHiveMetaStoreClient"
QUERY_CONTEXT_LOGGER = "SQLQueryContextLogger"
"""pyspark logs a failing statement's error as a JSON record on stderr; the command prints it as one line."""


def arrow_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    """The rows of an Arrow table as tuples of Python values (repeated column names kept)."""
    columns = [column.to_pylist() for column in table.columns]
    return list(zip(*columns, strict=True)) if columns else []


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
