"""Silver transforms on small frames: lifecycle, the columns resolved at a map's position, plan keys,
map columns as history columns, trusted events and quarantine rows.

Positions are those of one server's binlog: ``mysql-bin.1000000`` follows ``mysql-bin.999999``
(the sequence number decides, not the path).
"""

from __future__ import annotations

from typing import Any

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

from pipelines.silver.transforms import lifecycle, map_history_columns, quarantine_of, resolve_columns, trusted
from pipelines.tables import HISTORY_COLUMN, QUARANTINE, SCHEMA_HISTORY, TABLE_ID_LIFECYCLE

A, B, C = "/l/mysql-bin.999999", "/l/mysql-bin.1000000", "/m/mysql-bin.000007"
SEQUENCE = {A: 999999, B: 1000000, C: 7}
S1, S2 = "/l/mysql-bin", "/m/mysql-bin"


def frame(spark: SparkSession, rows: list[tuple[Any, ...]], schema: StructType) -> DataFrame:
    return spark.createDataFrame(rows, schema)


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
        StructField("run_id", StringType()),
    ]
)
LIFECYCLE_OUT = [n for n in TABLE_ID_LIFECYCLE.names if n != "file_name"]


def test_lifecycle_flags_an_id_reused_for_another_table_or_shape_within_one_file_only(spark: SparkSession) -> None:
    a, b = "/logs/bin.000001", "/logs/bin.000002"
    maps = [
        (a, "bin.000001", 100, 10, "shop", "orders", "f1", 300, 2, "r1"),
        (a, "bin.000001", 400, 10, "shop", "orders", "f1", 500, 1, "r1"),
        (a, "bin.000001", 900, 10, "shop", "items", "f9", None, 0, "r1"),  # same id, another table (after FLUSH)
        (a, "bin.000001", 150, 11, "shop", "users", "u1", 300, 1, "r1"),
        (a, "bin.000001", 600, 11, "shop", "users", "u2", 700, 4, "r1"),  # same id and table, ALTERed shape
        (b, "bin.000002", 120, 10, "shop", "orders", "f1", 200, 3, "r1"),  # id 10 again: another file, never mixed
    ]
    out = lifecycle(frame(spark, maps, LIFECYCLE_IN))
    assert out.columns == TABLE_ID_LIFECYCLE.names
    expected = [
        (a, 10, ["shop.items", "shop.orders"], 100, 900, 3, 3, None, ["f1", "f9"], True, True, "r1"),
        (a, 11, ["shop.users"], 150, 700, 2, 5, None, ["u1", "u2"], False, True, "r1"),
        (b, 10, ["shop.orders"], 120, 200, 1, 3, None, ["f1"], False, False, "r1"),
    ]
    assert sorted(tuple(r) for r in out.select(*LIFECYCLE_OUT).collect()) == expected


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
MAPS = StructType(
    [
        StructField("server", StringType()),
        StructField("sequence", LongType()),
        StructField("file", StringType()),
        StructField("offset", LongType()),
        StructField("inner_index", IntegerType()),
        StructField("schema_name", StringType()),
        StructField("table_name", StringType()),
        StructField("column_count", IntegerType()),
        StructField("column_names", ArrayType(StringType())),
        StructField("columns", ArrayType(MAP_COLUMN)),
        StructField("primary_key", ArrayType(IntegerType())),
        StructField("shape_key", StringType()),
    ]
)


def _map(
    file: str,
    offset: int,
    table: str,
    count: int,
    names: list[str] | None = None,
    shape_key: str | None = None,
    server: str = S1,
    primary_key: tuple[int, ...] = (),
) -> tuple[Any, ...]:
    """A decoded map; its shape key, unless given, from what a body fixes (table, columns, names, key)."""
    shape_key = shape_key or f"{table}/{count}/{names}/{primary_key}"
    columns = [(i + 1, n, "int unsigned", True, None, None) for i, n in enumerate(names or [None] * count)]
    key = list(primary_key)
    return (server, SEQUENCE[file], file, offset, None, "shop", table, count, names, columns, key, shape_key)


def _version(
    table: str, version: int, start: tuple[str, int] | None, end: tuple[str, int] | None, names: list[str] | None
) -> tuple[Any, ...]:
    columns = None if names is None else [(i + 1, n, "int", True, None, None, None, None) for i, n in enumerate(names)]
    source = "seed" if start is None else "ddl"
    start_at = (None, None, None, None) if start is None else (SEQUENCE[start[0]], start[0], start[1], None)
    end_at = (None, None, None, None) if end is None else (SEQUENCE[end[0]], end[0], end[1], None)
    server = S2 if start is not None and start[0] == C else S1
    return (server, "shop", table, version, *start_at, *end_at, columns, source, None, None, "r0")


HISTORY = [
    _version("t", 1, None, (A, 500), ["id", "a"]),
    _version("t", 2, (A, 500), (B, 100), ["id", "a", "b"]),
    _version("t", 3, (B, 100), (B, 300), None),  # dropped
    _version("t", 4, (B, 300), None, ["k"]),  # re-created
    _version("u", 1, (A, 100), (A, 300), ["p", "q"]),
    _version("u", 2, (A, 300), None, ["p", "r"]),  # RENAME COLUMN q TO r
    _version("t", 1, (C, 10), None, ["x", "y"]),  # another server's table of the same name
]


def resolved(spark: SparkSession, maps: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    history = frame(spark, HISTORY, SCHEMA_HISTORY.schema)
    out = frame(spark, maps, MAPS).transform(resolve_columns(history))
    rows = out.orderBy("server", "sequence", "offset").collect()
    return [(r.file, r.offset, r.resolved_column_names, r.names_source, r.history_version) for r in rows]


def test_maps_without_names_take_the_columns_of_their_servers_version_in_force_with_a_matching_count(
    spark: SparkSession,
) -> None:
    got = resolved(
        spark,
        [
            _map(A, 400, "t", 2),  # the seed version
            _map(A, 500, "t", 3),  # the ALTER's own position: its version holds from there
            _map(A, 700, "t", 4),  # column count differs from the version in force: unresolved
            _map(B, 100, "t", 3),  # the DROP's position
            _map(B, 200, "t", 3),  # after the DROP
            _map(B, 400, "t", 1),  # the re-created table (B follows A: sequence 1000000 > 999999)
            _map(B, 600, "other", 1),  # a table the history does not know
            _map(C, 5, "t", 2, server=S2),  # before the other server's CREATE: S1's seed does not apply
            _map(C, 20, "t", 2, server=S2),  # the other server's own version
        ],
    )
    assert got == [
        (A, 400, ["id", "a"], "seed", 1),
        (A, 500, ["id", "a", "b"], "ddl", 2),
        (A, 700, None, None, None),
        (B, 100, None, None, None),
        (B, 200, None, None, None),
        (B, 400, ["k"], "ddl", 4),
        (B, 600, None, None, None),
        (C, 5, None, None, None),
        (C, 20, ["x", "y"], "ddl", 1),
    ]


def test_a_map_with_its_own_names_keeps_them_with_its_own_types_and_key(spark: SparkSession) -> None:
    history = frame(spark, HISTORY, SCHEMA_HISTORY.schema)
    maps = [
        _map(B, 500, "t", 2, ["k2", "v"], primary_key=(1,)),  # FULL metadata: the history is not asked
        _map(B, 510, "other", 1, ["only"]),  # names but no key: the map tells there is none
        _map(B, 520, "other", 1),  # no names, no key: the key is unknown
    ]
    out = frame(spark, maps, MAPS).transform(resolve_columns(history)).orderBy("offset").collect()
    assert [(r.resolved_column_names, r.names_source, r.history_version) for r in out] == [
        (["k2", "v"], "table_map", None),
        (["only"], "table_map", None),
        (None, None, None),
    ]
    assert [c.asDict() for c in out[0].resolved_columns] == [
        {
            "position": 1,
            "name": "k2",
            "type": "int unsigned",
            "nullable": True,
            "charset": None,
            "collation": None,
            "default": None,
            "primary_key": True,
        },
        {
            "position": 2,
            "name": "v",
            "type": "int unsigned",
            "nullable": True,
            "charset": None,
            "collation": None,
            "default": None,
            "primary_key": False,
        },
    ]
    assert [c.primary_key for c in out[1].resolved_columns] == [False]
    element = frame(spark, maps, MAPS).select(map_history_columns().alias("c")).schema["c"].dataType
    assert isinstance(element, ArrayType) and element.elementType == HISTORY_COLUMN


def test_plan_keys_are_equal_exactly_when_shape_and_resolved_columns_are(spark: SparkSession) -> None:
    history = frame(spark, HISTORY, SCHEMA_HISTORY.schema)
    maps = [
        _map(A, 200, "u", 2, shape_key="su"),  # (p, q)
        _map(A, 400, "u", 2, shape_key="su"),  # (p, r): another plan
        _map(B, 50, "u", 2, shape_key="su"),  # (p, r) in the next file, another table id: the same plan
        _map(A, 250, "u", 2, shape_key="su2"),  # (p, q) but another shape: another plan
        _map(B, 60, "u", 2, ["p", "r"], shape_key="su-named"),  # own names: types differ from the history's
    ]
    out = frame(spark, maps, MAPS).transform(resolve_columns(history)).collect()
    plan = {(r.file, r.offset): r.plan_key for r in out}
    assert plan[(A, 400)] == plan[(B, 50)]
    assert len({plan[(A, 200)], plan[(A, 400)], plan[(A, 250)], plan[(B, 60)]}) == 4
    assert all(len(key) == 32 for key in plan.values())


EVENTS = StructType(
    [
        StructField("file", StringType()),
        StructField("offset", LongType()),
        StructField("checksum_ok", BooleanType()),
    ]
)


def test_trusted_events_are_those_whose_checksum_did_not_fail(spark: SparkSession) -> None:
    events = frame(spark, [(A, 4, True), (A, 100, None), (A, 200, False)], EVENTS)
    assert [r.offset for r in trusted(events).orderBy("offset").collect()] == [4, 100]


DECODED = StructType(
    [
        StructField("file", StringType()),
        StructField("file_name", StringType()),
        StructField("offset", LongType()),
        StructField("inner_index", IntegerType()),
        StructField("event_type_name", StringType()),
        StructField("problem_code", StringType()),
        StructField("problem_severity", StringType()),
        StructField("problem_path", StringType()),
        StructField("problem_message", StringType()),
        StructField("body", StringType()),
    ]
)


def test_decoder_rows_with_a_problem_become_silver_quarantine_rows(spark: SparkSession) -> None:
    decoded = frame(
        spark,
        [
            (A, "mysql-bin.999999", 100, None, "TABLE_MAP", None, None, None, None, "ok"),
            (A, "mysql-bin.999999", 200, None, "TABLE_MAP", "MALFORMED", "error", "column 3", "runs past", "b1"),
            (A, "mysql-bin.999999", 300, 2, "QUERY", "UNKNOWN_OPTIONAL_METADATA", "warning", None, "kept", "b2"),
        ],
        DECODED,
    )
    rows = quarantine_of(decoded.withColumn("body", decoded.body.cast("binary")), "run-9").collect()
    assert [tuple(r) for r in rows] == [
        ("silver", A, "mysql-bin.999999", 200, None, "TABLE_MAP", "MALFORMED", "error", "column 3", "runs past",
         bytearray(b"b1"), "run-9"),
        ("silver", A, "mysql-bin.999999", 300, 2, "QUERY", "UNKNOWN_OPTIONAL_METADATA", "warning", None, "kept",
         bytearray(b"b2"), "run-9"),
    ]  # fmt: skip
    assert list(rows[0].asDict()) == QUARANTINE.names
