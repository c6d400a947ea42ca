"""The gold type of every binlog column type, from the TABLE_MAP facts or from DDL type text (no Spark session)."""

from __future__ import annotations

from pathlib import Path

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
from binlog_core.decoder import decode_file
from binlog_core.events.query import QueryEvent
from binlog_core.table_map import BLOB_COMPRESSED, VARCHAR_COMPRESSED, Column, TableMap
from pipelines.gold.types import column_kind, ddl_kind, raw_type, spark_type, type_suffix
from pipelines.silver.ddl import SchemaRegistry

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


FULL = Path(__file__).resolve().parents[2] / "fixtures" / "mariadb" / "full"


def _declared_and_logged() -> list[tuple[str, str, str]]:
    """(column, DDL type text, gold kind of the TABLE_MAP column the server logged) for every column
    of every table the fixture workload created, from its binlogs (binlog_row_metadata=FULL)."""
    registry = SchemaRegistry()
    found: dict[tuple[str, str], tuple[str, str, str]] = {}
    for path in sorted(FULL.glob("mysql-bin.0*")):
        for item in decode_file(path):
            body = item.body
            if isinstance(body, QueryEvent) and isinstance(body.statement, str):
                registry.apply(body.statement, body.schema or None)
            elif isinstance(body, TableMap):
                declared = registry.columns(body.schema, body.table) or []
                types = {spec.name.lower(): spec.type for spec in declared}
                for column in body.columns:
                    if column.name is not None and column.name.lower() in types:
                        key = (f"{body.schema}.{body.table}", column.name)
                        found[key] = (f"{key[0]}.{column.name}", types[column.name.lower()], column_kind(column))
    return sorted(found.values())


def test_a_column_known_only_from_ddl_gets_the_kind_of_the_column_the_server_logs_for_its_type() -> None:
    cases = _declared_and_logged()
    assert len({declared for _, declared, _ in cases}) >= 20  # the fixture's types: every family
    assert [(name, declared, spark_type(ddl_kind(declared))) for name, declared, _ in cases] == [
        (name, declared, spark_type(logged)) for name, declared, logged in cases
    ]
    # the same kinds too, but for MariaDB's JSON, which it logs as LONGTEXT
    assert {(d, ddl_kind(d), logged) for _, d, logged in cases if ddl_kind(d) != logged} == {
        ("json", "json:string", "text:string")
    }
