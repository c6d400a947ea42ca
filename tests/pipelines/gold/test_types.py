"""The gold type of every binlog column type, from the TABLE_MAP facts alone (no Spark session)."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from binlog_core.constants import ColumnType
from binlog_core.table_map import BLOB_COMPRESSED, VARCHAR_COMPRESSED, Column
from pipelines.gold.types import column_kind, raw_type, spark_type, type_suffix

UTF8MB4, BINARY = 45, 63


def _column(real: int, **facts: object) -> Column:
    return Column(0, real, real, 0, True, **facts)  # type: ignore[arg-type]


CASES: list[tuple[Column, str, DataType]] = [
    (_column(ColumnType.TINY, unsigned=False), "int:tinyint", ByteType()),
    (_column(ColumnType.TINY, unsigned=True), "int:smallint", ShortType()),
    (_column(ColumnType.SHORT, unsigned=False), "int:smallint", ShortType()),
    (_column(ColumnType.SHORT, unsigned=True), "int:int", IntegerType()),
    (_column(ColumnType.INT24, unsigned=False), "int:int", IntegerType()),
    (_column(ColumnType.INT24, unsigned=True), "int:int", IntegerType()),
    (_column(ColumnType.LONG, unsigned=False), "int:int", IntegerType()),
    (_column(ColumnType.LONG, unsigned=True), "int:bigint", LongType()),
    (_column(ColumnType.LONGLONG, unsigned=False), "int:bigint", LongType()),
    (_column(ColumnType.LONGLONG, unsigned=True), "int:decimal(20,0)", DecimalType(20, 0)),
    (_column(ColumnType.LONGLONG), "int:bigint", LongType()),  # signedness not in the file
    (_column(ColumnType.NEWDECIMAL, precision=10, scale=2), "decimal:decimal(10,2)", DecimalType(10, 2)),
    (_column(ColumnType.NEWDECIMAL, precision=38, scale=38), "decimal:decimal(38,38)", DecimalType(38, 38)),
    (_column(ColumnType.NEWDECIMAL, precision=65, scale=30), "decimal:string", StringType()),
    (_column(ColumnType.FLOAT), "float:float", FloatType()),
    (_column(ColumnType.DOUBLE), "double:double", DoubleType()),
    (_column(ColumnType.TIMESTAMP2, fsp=6), "timestamp:timestamp", TimestampType()),
    (_column(ColumnType.DATETIME2, fsp=0), "datetime:timestamp_ntz", TimestampNTZType()),  # a wall-clock value
    (_column(ColumnType.DATETIME), "datetime:timestamp_ntz", TimestampNTZType()),
    (_column(ColumnType.TIMESTAMP), "timestamp:timestamp", TimestampType()),
    (_column(ColumnType.DATE), "date:date", DateType()),
    (_column(ColumnType.TIME2, fsp=3), "time:string", StringType()),
    (_column(ColumnType.TIME), "time:string", StringType()),
    (_column(ColumnType.YEAR), "year:int", IntegerType()),
    (_column(ColumnType.BIT, bits=64), "bit:bigint", LongType()),
    (_column(ColumnType.ENUM, length=1), "enum:string", StringType()),
    (_column(ColumnType.SET, length=8), "set:string", StringType()),
    (_column(ColumnType.JSON, pack_length=4), "json:string", StringType()),
    (_column(ColumnType.STRING, length=40, collation=UTF8MB4), "text:string", StringType()),
    (_column(ColumnType.STRING, length=16, collation=BINARY), "binary:binary", BinaryType()),
    (_column(ColumnType.VARCHAR, length=300, collation=UTF8MB4), "text:string", StringType()),
    (_column(ColumnType.VARCHAR, length=300), "text:string", StringType()),  # charset not in the file
    (_column(ColumnType.BLOB, pack_length=2, collation=BINARY), "binary:binary", BinaryType()),
    (_column(ColumnType.BLOB, pack_length=4, collation=UTF8MB4), "text:string", StringType()),
    (_column(VARCHAR_COMPRESSED, length=100, collation=UTF8MB4), "text:string", StringType()),
    (_column(BLOB_COMPRESSED, pack_length=2, collation=BINARY), "binary:binary", BinaryType()),
    (_column(ColumnType.GEOMETRY, pack_length=4), "binary:binary", BinaryType()),
    (_column(ColumnType.VECTOR, pack_length=4), "vector:array<float>", ArrayType(FloatType(), True)),
    (_column(ColumnType.NULL), "other:string", StringType()),
]


@pytest.mark.parametrize(("column", "kind", "data_type"), CASES, ids=[f"{c.type_name}-{k}" for c, k, _ in CASES])
def test_each_column_type_maps_to_its_spark_type(column: Column, kind: str, data_type: DataType) -> None:
    assert column_kind(column) == kind
    assert spark_type(kind) == data_type


def test_zero_dates_undecodable_text_and_json_diffs_get_a_raw_companion_and_nothing_else_does() -> None:
    assert raw_type("timestamp:timestamp") == StringType()
    assert raw_type("datetime:timestamp_ntz") == StringType()
    assert raw_type("date:date") == StringType()
    assert raw_type("text:string") == BinaryType()
    assert raw_type("json:string") == StringType()
    assert [raw_type(k) for k in ("int:bigint", "time:string", "binary:binary")] == [None] * 3


def test_a_changed_type_names_its_field_by_the_new_type() -> None:
    assert type_suffix("decimal:decimal(12,2)") == "__decimal_12_2"
    assert type_suffix("int:bigint") == "__bigint"
    assert type_suffix("vector:array<float>") == "__array_float"
    assert type_suffix("datetime:timestamp_ntz") == "__timestamp_ntz"
