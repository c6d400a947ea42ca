"""Silver transforms on small hand-built frames: in-force ranges, lifecycle flags, shapes, resolved columns."""

from __future__ import annotations

from typing import Any

from chispa.dataframe_comparer import assert_df_equality
from pipelines.silver.schema import HISTORY_COLUMN, SCHEMA_HISTORY
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from pipelines.silver.transforms import lifecycle, resolve_columns, shape_changes, with_in_force

FD, TABLE_MAP, WRITE_ROWS, UPDATE_ROWS = 15, 19, 30, 31

EVENTS = StructType(
    [
        StructField("file", StringType()),
        StructField("offset", LongType()),
        StructField("inner_index", IntegerType()),
        StructField("event_type", IntegerType()),
        StructField("table_id", LongType()),
        StructField("statement_end", BooleanType()),
        StructField("checksum_ok", BooleanType()),
    ]
)
MAPS = StructType(
    [
        StructField("file", StringType()),
        StructField("offset", LongType()),
        StructField("inner_index", IntegerType()),
        StructField("table_id", LongType()),
    ]
)
RANGES = StructType(
    [
        StructField("file", StringType()),
        StructField("offset", LongType()),
        StructField("inner_index", IntegerType()),
        StructField("in_force_until", LongType()),
        StructField("in_force_until_inner_index", IntegerType()),
        StructField("ended_by", StringType()),
        StructField("rows_events", LongType()),
    ]
)


def frame(spark: SparkSession, rows: list[tuple[Any, ...]], schema: StructType) -> DataFrame:
    return spark.createDataFrame(rows, schema)


def test_maps_end_at_statement_end_at_a_replacing_map_and_at_format_description(spark: SparkSession) -> None:
    a, b = "s3a://logs/mysql-bin.000001", "s3a://logs/mysql-bin.000002"
    events = [
        (a, 4, None, FD, None, None, True),
        (a, 100, None, TABLE_MAP, 10, None, True),
        (a, 150, None, TABLE_MAP, 11, None, True),
        (a, 200, None, WRITE_ROWS, 10, False, True),
        (a, 250, None, WRITE_ROWS, 11, True, True),  # ends both maps of the statement, still reads with 11
        (a, 300, None, TABLE_MAP, 10, None, True),
        (a, 350, None, UPDATE_ROWS, 10, False, True),
        (a, 400, None, TABLE_MAP, 10, None, True),  # replaces the map at 300
        (a, 450, None, UPDATE_ROWS, 10, True, True),
        (a, 500, None, TABLE_MAP, 12, None, True),
        (a, 600, None, FD, None, None, True),  # a new FORMAT_DESCRIPTION ends every map
        (a, 650, None, WRITE_ROWS, 12, True, True),  # no map in force: counted nowhere
        (a, 700, None, TABLE_MAP, 12, None, True),
        (a, 720, None, WRITE_ROWS, 12, True, False),  # checksum failed: skipped like the decoder does
        # the same table id in another file, inside a compressed transaction payload
        (b, 120, None, 40, None, None, True),
        (b, 120, 0, TABLE_MAP, 10, None, True),
        (b, 120, 1, WRITE_ROWS, 10, False, True),
        (b, 120, 2, WRITE_ROWS, 10, True, True),
        (b, 300, None, WRITE_ROWS, 10, True, True),  # after the end of b's map: unmapped
    ]
    maps = [(e[0], e[1], e[2], e[4]) for e in events if e[3] == TABLE_MAP]
    out = frame(spark, maps, MAPS).transform(with_in_force(frame(spark, events, EVENTS)))
    expected = [
        (a, 100, None, 250, None, "statement_end", 1),
        (a, 150, None, 250, None, "statement_end", 1),
        (a, 300, None, 400, None, "replaced", 1),
        (a, 400, None, 450, None, "statement_end", 1),
        (a, 500, None, 600, None, "format_description", 0),
        (a, 700, None, None, None, None, 0),
        (b, 120, 0, 120, 2, "statement_end", 2),
    ]
    assert_df_equality(
        out.select(*RANGES.fieldNames()),
        frame(spark, expected, RANGES),
        ignore_row_order=True,
        ignore_nullable=True,
    )


def test_a_map_that_did_not_decode_leaves_the_previous_mapping_in_force(spark: SparkSession) -> None:
    f = "/data/mysql-bin.000009"
    events = [
        (f, 100, None, TABLE_MAP, 7, None, True),
        (f, 200, None, TABLE_MAP, 7, None, True),  # not in the maps frame: it failed to decode
        (f, 300, None, WRITE_ROWS, 7, True, True),
    ]
    out = frame(spark, [(f, 100, None, 7)], MAPS).transform(with_in_force(frame(spark, events, EVENTS)))
    assert [tuple(r) for r in out.select(*RANGES.fieldNames()).collect()] == [
        (f, 100, None, 300, None, "statement_end", 1)
    ]


LIFECYCLE_IN = StructType(
    [
        StructField("file", StringType()),
        StructField("file_name", StringType()),
        StructField("offset", LongType()),
        StructField("table_id", LongType()),
        StructField("schema_name", StringType()),
        StructField("table_name", StringType()),
        StructField("fingerprint", StringType()),
        StructField("in_force_until", LongType()),
        StructField("rows_events", LongType()),
    ]
)
LIFECYCLE_OUT = StructType(
    [
        StructField("file", StringType()),
        StructField("table_id", LongType()),
        StructField("tables", ArrayType(StringType())),
        StructField("first_offset", LongType()),
        StructField("last_offset", LongType()),
        StructField("maps", LongType()),
        StructField("rows_events", LongType()),
        StructField("rows", LongType()),
        StructField("fingerprints", ArrayType(StringType())),
        StructField("reused_for_other_table", BooleanType()),
        StructField("reused_for_other_shape", BooleanType()),
    ]
)


def test_lifecycle_flags_an_id_reused_for_another_table_or_shape_within_one_file_only(spark: SparkSession) -> None:
    a, b = "/logs/bin.000001", "/logs/bin.000002"
    maps = [
        (a, "bin.000001", 100, 10, "shop", "orders", "f1", 300, 2),
        (a, "bin.000001", 400, 10, "shop", "orders", "f1", 500, 1),
        (a, "bin.000001", 900, 10, "shop", "items", "f9", None, 0),  # same id, another table (after FLUSH)
        (a, "bin.000001", 150, 11, "shop", "users", "u1", 300, 1),
        (a, "bin.000001", 600, 11, "shop", "users", "u2", 700, 4),  # same id and table, ALTERed shape
        (b, "bin.000002", 120, 10, "shop", "orders", "f1", 200, 3),  # id 10 again: another file, never mixed
    ]
    out = lifecycle(frame(spark, maps, LIFECYCLE_IN))
    expected = [
        (a, 10, ["shop.items", "shop.orders"], 100, 900, 3, 3, None, ["f1", "f9"], True, True),
        (a, 11, ["shop.users"], 150, 700, 2, 5, None, ["u1", "u2"], False, True),
        (b, 10, ["shop.orders"], 120, 200, 1, 3, None, ["f1"], False, False),
    ]
    assert_df_equality(
        out.select(*LIFECYCLE_OUT.fieldNames()),
        frame(spark, expected, LIFECYCLE_OUT),
        ignore_row_order=True,
        ignore_nullable=True,
    )


MAP_COLUMN = StructType(
    [
        StructField("position", IntegerType()),
        StructField("name", StringType()),
        StructField("mysql_type", StringType()),
        StructField("nullable", BooleanType()),
        StructField("charset", StringType()),
        StructField("collation", StringType()),
    ]
)
NAMED_MAPS = StructType(
    [
        StructField("file", StringType()),
        StructField("offset", LongType()),
        StructField("inner_index", IntegerType()),
        StructField("schema_name", StringType()),
        StructField("table_name", StringType()),
        StructField("fingerprint", StringType()),
        StructField("column_count", IntegerType()),
        StructField("column_names", ArrayType(StringType())),
        StructField("columns", ArrayType(MAP_COLUMN)),
    ]
)


def _map(file: str, offset: int, table: str, fingerprint: str, names: list[str] | None, count: int) -> tuple[Any, ...]:
    columns = [(i + 1, n, "int", True, None, None) for i, n in enumerate(names or [None] * count)]
    return (file, offset, None, "db", table, fingerprint, count, names, columns)


def test_shape_changes_keep_the_first_map_of_each_run_of_one_fingerprint_across_files(spark: SparkSession) -> None:
    a, b = "/l/bin.000001", "/l/bin.000002"
    maps = [
        _map(a, 100, "t", "f1", ["id"], 1),
        _map(a, 200, "t", "f1", ["id"], 1),
        _map(a, 300, "t", "f2", ["id", "x"], 2),
        _map(b, 50, "t", "f2", ["id", "x"], 2),
        _map(b, 90, "t", "f1", ["id"], 1),  # back to the first shape: a change again
        _map(b, 95, "u", "g1", None, 1),  # no names: says nothing about the shape
    ]
    out = shape_changes(frame(spark, maps, NAMED_MAPS)).select("file", "offset", "fingerprint", "columns")
    rows = out.orderBy("file", "offset").collect()
    assert [(r.file, r.offset, r.fingerprint, [c.name for c in r.columns]) for r in rows] == [
        (a, 100, "f1", ["id"]),
        (a, 300, "f2", ["id", "x"]),
        (b, 90, "f1", ["id"]),
    ]


def _version(
    table: str, version: int, file: str | None, offset: int | None, names: list[str] | None, source: str
) -> tuple[Any, ...]:
    columns = None if names is None else [(i + 1, n, "int", True, None, None) for i, n in enumerate(names)]
    return ("db", table, version, file, offset, None, columns, source, None, None)


def test_resolved_columns_are_the_maps_own_else_the_history_version_in_force_with_a_matching_count(
    spark: SparkSession,
) -> None:
    a, b = "/l/bin.000001", "/l/bin.000002"
    history = frame(
        spark,
        [
            _version("t", 1, None, None, ["id", "a"], "seed"),
            _version("t", 2, a, 500, ["id", "a", "b"], "ddl"),
            _version("t", 3, b, 100, None, "ddl"),  # dropped
            _version("t", 4, b, 300, ["k"], "ddl"),  # re-created
        ],
        SCHEMA_HISTORY,
    )
    maps = [
        _map(a, 400, "t", "f1", None, 2),  # seed version in force
        _map(a, 600, "t", "f2", None, 3),  # after the ALTER
        _map(a, 700, "t", "f3", None, 4),  # column count differs from the version in force: unresolved
        _map(b, 200, "t", "f2", None, 3),  # after the DROP: unresolved
        _map(b, 400, "t", "f4", None, 1),  # the re-created table
        _map(b, 500, "t", "f5", ["k2", "v"], 2),  # the map's own names win
        _map(b, 600, "other", "o1", None, 1),  # a table the history does not know
    ]
    out = frame(spark, maps, NAMED_MAPS).transform(resolve_columns(history))
    got = [(r.file, r.offset, r.resolved_column_names, r.names_source) for r in out.orderBy("file", "offset").collect()]
    assert got == [
        (a, 400, ["id", "a"], "seed"),
        (a, 600, ["id", "a", "b"], "ddl"),
        (a, 700, None, None),
        (b, 200, None, None),
        (b, 400, ["k"], "ddl"),
        (b, 500, ["k2", "v"], "table_map"),
        (b, 600, None, None),
    ]
    resolved_type = out.schema["resolved_columns"].dataType
    assert isinstance(resolved_type, ArrayType) and isinstance(resolved_type.elementType, StructType)
    assert resolved_type.elementType.fieldNames() == HISTORY_COLUMN.fieldNames()
