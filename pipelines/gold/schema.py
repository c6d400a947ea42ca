"""The gold tables' schemas, declared once.

``changes`` is the unified audit table: one row per row change of every source table, keyed by
``(file, offset, inner_index, row_index)``, with the before and after images as the JSON text the
``binlog-dump`` CLI prints (values rendered by :mod:`binlog_core.render`).  The per-table change
tables (``<schema>__<table>``) are projected from the same rows with typed values; their shape
depends on the source table and is described in :mod:`pipelines.gold.transforms`.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines.silver.schema import HISTORY_COLUMN

_NAMES = ArrayType(StringType(), True)

ROWS_INPUT = StructType(
    [
        StructField("file", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("offset", LongType(), False),
        StructField("inner_index", IntegerType(), True),
        StructField("timestamp", LongType(), False),
        StructField("event_type", IntegerType(), False),
        StructField("server_id", LongType(), False),
        StructField("gtid", StringType(), True),
        StructField("body", BinaryType(), False),
        StructField("format_description", StringType(), False),
        StructField("map_body", BinaryType(), True),  # TABLE_MAP in force, null when none is
        StructField("map_format_description", StringType(), True),
        # the schema-history columns in force at the map (names, types, charsets): what a map
        # written without full metadata leaves open is taken from them
        StructField("history_columns", ArrayType(HISTORY_COLUMN, True), True),
    ]
)
"""A rows event with the table map in force: what the distributed decoder reads."""

DECODED = StructType(
    [
        StructField("kind", StringType(), False),  # change | problem
        StructField("file", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("offset", LongType(), False),
        StructField("inner_index", IntegerType(), True),
        StructField("row_index", IntegerType(), True),
        StructField("event_type", StringType(), False),
        StructField("gtid", StringType(), True),
        StructField("timestamp", LongType(), False),
        StructField("server_id", LongType(), False),
        StructField("schema_name", StringType(), True),
        StructField("table_name", StringType(), True),
        StructField("table_id", LongType(), True),
        StructField("op", StringType(), True),
        StructField("before", StringType(), True),
        StructField("after", StringType(), True),
        StructField("absent_before", _NAMES, True),
        StructField("absent_after", _NAMES, True),
        StructField("undecoded_before", _NAMES, True),
        StructField("undecoded_after", _NAMES, True),
        StructField("column_names", _NAMES, True),
        StructField("column_kinds", _NAMES, True),
        StructField("code", StringType(), True),  # problems: BinlogError.code
        StructField("severity", StringType(), True),
        StructField("path", StringType(), True),
        StructField("message", StringType(), True),
        StructField("problem_body", BinaryType(), True),
    ]
)
"""What the distributed decoder emits: row changes and problems, told apart by ``kind``."""

CHANGES = StructType(
    [
        StructField("file", StringType(), False),  # full path / URI, the key of every layer
        StructField("file_name", StringType(), False),
        StructField("offset", LongType(), False),  # of the rows event
        StructField("inner_index", IntegerType(), True),  # inside a TRANSACTION_PAYLOAD, else null
        StructField("row_index", IntegerType(), False),  # row inside the rows event, from 0
        StructField("event_type", StringType(), False),  # WRITE_ROWS, UPDATE_ROWS_V1, ...
        StructField("gtid", StringType(), True),
        # when the transaction was committed: the header time of the event that ends it (XID,
        # COMMIT, XA PREPARE); null when the file holds no end for it (cut mid-transaction)
        StructField("commit_timestamp", TimestampType(), True),
        StructField("event_timestamp", TimestampType(), False),  # the rows event's header time (UTC)
        StructField("server_id", LongType(), False),
        StructField("schema_name", StringType(), False),
        StructField("table_name", StringType(), False),
        StructField("table_id", LongType(), False),
        StructField("op", StringType(), False),  # insert | update | delete
        StructField("before", StringType(), True),  # JSON object {column: value}, null for inserts
        StructField("after", StringType(), True),  # JSON object {column: value}, null for deletes
        StructField("absent_before", _NAMES, True),  # columns not in the before image (MINIMAL/NOBLOB)
        StructField("absent_after", _NAMES, True),
        # columns whose image holds another form than the value: text whose bytes do not decode
        # ("hex:..."), a partial JSON update ({"json_diffs": [...]}, MySQL's PARTIAL_JSON)
        StructField("undecoded_before", _NAMES, True),
        StructField("undecoded_after", _NAMES, True),
        StructField("column_names", _NAMES, False),  # the table's columns in order
        StructField("column_kinds", _NAMES, False),  # pipelines.gold.types kind of each column
    ]
)
"""One row per row change of every table (``changes``)."""

__all__ = ["CHANGES", "DECODED", "ROWS_INPUT"]
