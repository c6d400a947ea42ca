"""Gold transforms on small hand-made frames: the table map in force, and the typed projection."""

from __future__ import annotations

import datetime
import json
import re
from decimal import Decimal
from typing import Any

from chispa import assert_df_equality
from pipelines.bronze.schema import BINLOG_EVENTS
from pipelines.gold.schema import CHANGES
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from binlog_core.columns import DecodeOptions
from binlog_core.constants import EventType
from pipelines.gold.stage import TABLE_MAP_COLUMNS
from pipelines.gold.transforms import (
    changes_of,
    decode_rows_events,
    gold_table_name,
    maps_in_force,
    problems_of,
    rows_input,
    table_layout,
    transaction_boundaries,
    typed_changes,
    with_commit_timestamps,
)
from tests.fixtures.truth import FIXTURES
from tests.pipelines.gold.inputs import bronze_rows

EVENTS = StructType(
    [
        StructField("file", StringType(), False),
        StructField("offset", LongType(), False),
        StructField("inner_index", IntegerType(), True),
        StructField("event_type", IntegerType(), False),
        StructField("table_id", LongType(), True),
        StructField("statement_end", BooleanType(), True),
        StructField("checksum_ok", BooleanType(), True),
    ]
)
MAPS = StructType([EVENTS["file"], EVENTS["offset"], EVENTS["inner_index"], StructField("table_id", LongType())])

FDE, MAP, ROWS = int(EventType.FORMAT_DESCRIPTION), int(EventType.TABLE_MAP), int(EventType.WRITE_ROWS)


def test_the_map_in_force_is_the_last_of_its_id_not_ended_by_statement_end_or_a_description(
    spark: SparkSession,
) -> None:
    events = [
        ("f", 4, None, FDE, None, None, True),
        ("f", 100, None, MAP, 1, None, True),
        ("f", 200, None, ROWS, 1, False, True),  # -> map at 100
        ("f", 300, None, ROWS, 1, True, True),  # -> map at 100, then every map ends
        ("f", 400, None, ROWS, 1, False, True),  # -> none
        ("f", 500, None, MAP, 1, None, False),  # checksum failed: not a map
        ("f", 600, None, ROWS, 1, True, True),  # -> none
        ("f", 700, None, MAP, 2, None, True),
        ("f", 800, None, MAP, 1, None, True),
        ("f", 810, None, ROWS, 1, False, True),  # -> map at 800 (not the one of id 2)
        ("f", 820, None, ROWS, 1, True, False),  # checksum failed: ends nothing, gets nothing
        ("f", 830, None, ROWS, 2, False, True),  # -> map at 700
        ("f", 850, None, FDE, None, None, True),  # a new description ends every map
        ("f", 900, None, ROWS, 2, True, True),  # -> none
        ("f", 1000, None, 40, None, None, True),  # TRANSACTION_PAYLOAD and its inner events
        ("f", 1000, 0, MAP, 3, None, None),
        ("f", 1000, 1, ROWS, 3, True, None),  # -> map at 1000#0
        ("f", 1000, 2, MAP, 3, None, None),
        ("f", 1000, 3, ROWS, 3, True, None),  # -> map at 1000#2
        ("g", 200, None, ROWS, 1, True, True),  # maps never cross files -> none
    ]
    maps = [(f, o, i, t) for f, o, i, e, t, _s, _c in events if e == MAP]
    got = maps_in_force(spark.createDataFrame(events, EVENTS), spark.createDataFrame(maps, MAPS))
    expected = spark.createDataFrame(
        [
            ("f", 200, None, -1, 100, -1),
            ("f", 300, None, -1, 100, -1),
            ("f", 400, None, -1, None, None),
            ("f", 600, None, -1, None, None),
            ("f", 810, None, -1, 800, -1),
            ("f", 830, None, -1, 700, -1),
            ("f", 900, None, -1, None, None),
            ("f", 1000, 1, 1, 1000, 0),
            ("f", 1000, 3, 3, 1000, 2),
            ("g", 200, None, -1, None, None),
        ],
        "file string, offset long, inner_index int, inner_key int, map_offset long, map_inner_key int",
    )
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


GTID, XID, QUERY = int(EventType.MARIADB_GTID), int(EventType.XID), int(EventType.QUERY)
TIMED = StructType([*EVENTS.fields, StructField("timestamp", LongType(), False)])
QUERIES = "file string, offset long, inner_index int, kind string, statement string, timestamp long"


def test_a_change_commits_when_the_event_ending_its_transaction_was_written(spark: SparkSession) -> None:
    events = [
        ("f", 100, None, GTID, None, None, True, 10),
        ("f", 200, None, ROWS, 1, True, True, 11),  # -> the XID at 300
        ("f", 300, None, XID, None, None, True, 19),
        ("f", 400, None, QUERY, None, None, True, 20),  # BEGIN
        ("f", 500, None, ROWS, 1, True, True, 21),  # -> the COMMIT query at 600
        ("f", 600, None, QUERY, None, None, True, 25),  # COMMIT
        ("f", 700, None, QUERY, None, None, True, 30),  # XA START
        ("f", 800, None, ROWS, 1, True, True, 31),  # -> XA END at 900
        ("f", 900, None, QUERY, None, None, True, 33),  # XA END
        ("f", 1000, None, 40, None, None, True, 40),  # TRANSACTION_PAYLOAD and its inner events
        ("f", 1000, 0, GTID, None, None, None, 40),
        ("f", 1000, 1, ROWS, 1, True, None, 40),  # -> the inner XID
        ("f", 1000, 2, XID, None, None, None, 44),
        ("f", 1100, None, XID, None, None, False, 50),  # checksum failed: ends nothing
        ("f", 1200, None, GTID, None, None, True, 60),
        ("f", 1300, None, ROWS, 1, True, True, 61),  # the file ends before its commit: null
        ("g", 200, None, ROWS, 1, True, True, 70),  # nothing after it in its file: null
        ("g", 300, None, GTID, None, None, True, 80),  # ... even if a later transaction begins
        ("g", 400, None, XID, None, None, True, 90),
    ]
    queries = [
        ("f", 400, None, "BEGIN", "BEGIN", 20),
        ("f", 600, None, "COMMIT", "COMMIT", 25),
        ("f", 700, None, "XA", "XA START X'01',X'',1", 30),
        ("f", 900, None, "XA", "XA END X'01',X'',1", 33),
    ]
    boundaries = transaction_boundaries(spark.createDataFrame(events, TIMED), spark.createDataFrame(queries, QUERIES))
    rows = [e for e in events if e[3] == ROWS]
    changes = spark.createDataFrame(
        [
            _change(0, "insert", None, "{}", file=f, offset=o, inner_index=i, commit_timestamp=None)
            for f, o, i, *_ in rows
        ],
        CHANGES,
    )
    got = changes.transform(with_commit_timestamps(boundaries)).select(
        "file", "offset", "inner_index", F.unix_timestamp("commit_timestamp").alias("committed")
    )
    expected = spark.createDataFrame(
        [
            ("f", 200, None, 19),
            ("f", 500, None, 25),
            ("f", 800, None, 33),
            ("f", 1000, 1, 44),
            ("f", 1300, None, None),
            ("g", 200, None, None),
        ],
        "file string, offset long, inner_index int, committed long",
    )
    assert_df_equality(got, expected, ignore_row_order=True, ignore_nullable=True)


NAMES_V1 = ["id", "amount", "created", "note", "flags", "vec", "raw"]
KINDS_V1 = [
    "int:decimal(20,0)",
    "decimal:decimal(5,2)",
    "timestamp:timestamp",
    "text:string",
    "bit:bigint",
    "vector:array<float>",
    "binary:binary",
]
NAMES_V2 = ["id", "amount", "born"]
KINDS_V2 = ["int:decimal(20,0)", "decimal:string", "date:date"]


def _change(row_index: int, op: str, before: str | None, after: str | None, **more: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "file": "s3a://b/mysql-bin.000001",
        "file_name": "mysql-bin.000001",
        "offset": 1000,
        "inner_index": None,
        "row_index": row_index,
        "event_type": "WRITE_ROWS",
        "gtid": "0-1-7",
        "commit_timestamp": datetime.datetime(2024, 1, 2, 3, 4, 5),
        "event_timestamp": datetime.datetime(2024, 1, 2, 3, 4, 1),
        "server_id": 1,
        "schema_name": "shop",
        "table_name": "orders",
        "table_id": 42,
        "op": op,
        "before": before,
        "after": after,
        "absent_before": None if before is None else [],
        "absent_after": None if after is None else [],
        "undecoded_before": None if before is None else [],
        "undecoded_after": None if after is None else [],
        "column_names": NAMES_V1,
        "column_kinds": KINDS_V1,
    }
    base.update(more)
    return base


def test_typed_projection_converts_each_value_and_keeps_what_does_not_fit_in_raw(spark: SparkSession) -> None:
    changes = spark.createDataFrame(
        [
            _change(
                0,
                "insert",
                None,
                '{"id": 18446744073709551615, "amount": "-12.50", "created": "2024-02-29 23:59:59.125", '
                '"note": "naïve", "flags": 18446744073709551615, "vec": [1.5, -2.0], "raw": "hex:00ff"}',
            ),
            _change(
                1,
                "update",
                '{"id": 1, "amount": "0.00", "created": "0000-00-00 00:00:00", "note": "hex:ff", "flags": 1, '
                '"vec": null, "raw": "hex:"}',
                '{"id": 1, "created": "2020-00-15 10:00:00"}',
                undecoded_before=["note"],
                absent_after=["amount", "note", "flags", "vec", "raw"],
            ),
            _change(
                2,
                "delete",
                '{"id": 2, "amount": "123456789012345678901234567890123456789.5", "born": "0000-00-00"}',
                None,
                column_names=NAMES_V2,
                column_kinds=KINDS_V2,
            ),
        ],
        CHANGES,
    )
    layout = table_layout([(NAMES_V1, KINDS_V1), (NAMES_V2, KINDS_V2)])
    got = changes.transform(typed_changes(layout)).select("row_index", "before", "after", "absent_columns")
    image = StructType(
        [
            StructField("id", DecimalType(20, 0)),
            StructField("amount", DecimalType(5, 2)),
            StructField("created", TimestampType()),
            StructField("created__raw", StringType()),
            StructField("note", StringType()),
            StructField("note__raw", BinaryType()),
            StructField("flags", LongType()),
            StructField("vec", ArrayType(FloatType())),
            StructField("raw", BinaryType()),
            StructField("amount__string", StringType()),
            StructField("born", DateType()),
            StructField("born__raw", StringType()),
        ]
    )
    names = ArrayType(StringType())
    schema = StructType(
        [
            StructField("row_index", IntegerType()),
            StructField("before", image),
            StructField("after", image),
            StructField("absent_columns", StructType([StructField("before", names), StructField("after", names)])),
        ]
    )
    nothing_v2 = (None, None)  # born, born__raw
    expected = spark.createDataFrame(
        [
            (
                0,
                None,
                (
                    Decimal("18446744073709551615"),
                    Decimal("-12.50"),
                    datetime.datetime(2024, 2, 29, 23, 59, 59, 125000),
                    None,
                    "naïve",
                    None,
                    -1,
                    [1.5, -2.0],
                    b"\x00\xff",
                    None,
                    *nothing_v2,
                ),
                (None, []),
            ),
            (
                1,
                (
                    Decimal(1),
                    Decimal("0.00"),
                    None,
                    "0000-00-00 00:00:00",
                    None,
                    b"\xff",
                    1,
                    None,
                    b"",
                    None,
                    None,
                    None,
                ),
                (Decimal(1), None, None, "2020-00-15 10:00:00", None, None, None, None, None, None, None, None),
                ([], ["amount", "note", "flags", "vec", "raw"]),
            ),
            (
                2,
                (
                    Decimal(2),
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    "123456789012345678901234567890123456789.5",
                    None,
                    "0000-00-00",
                ),
                None,
                ([], None),
            ),
        ],
        schema,
    )
    assert_df_equality(got, expected, ignore_nullable=True)


def test_a_stored_table_keeps_its_field_names_and_types() -> None:
    stored = StructType(
        [
            StructField("id", IntegerType()),
            StructField("price", DecimalType(10, 2)),
            StructField("when", TimestampType()),
            StructField("when__raw", StringType()),
        ]
    )
    layout = table_layout(
        [(["id", "price", "qty"], ["int:bigint", "decimal:decimal(10,2)", "int:int"])],
        stored,
    )
    assert layout.struct_type().simpleString() == (
        "struct<id:int,price:decimal(10,2),when:timestamp,when__raw:string,id__bigint:bigint,qty:int>"
    )
    assert [(f.name, f.sources) for f in layout.fields] == [
        ("id", ()),
        ("price", (("price", "decimal:decimal(10,2)"),)),
        ("when", ()),
        ("id__bigint", (("id", "int:bigint"),)),
        ("qty", (("qty", "int:int"),)),
    ]


def test_rows_events_without_a_map_in_force_are_quarantined_and_never_guessed(spark: SparkSession) -> None:
    events, maps, _files = bronze_rows(FIXTURES / "full" / "mysql-bin.000003")
    first_rows = next(e for e in events if e["event_type"] == int(EventType.WRITE_ROWS_V1))
    first_map = next(m for m in maps if m["table_id"] == first_rows["table_id"])
    without = [m for m in maps if m is not first_map]
    decoded = rows_input(
        spark.createDataFrame(events, BINLOG_EVENTS), spark.createDataFrame(without, TABLE_MAP_COLUMNS)
    ).transform(decode_rows_events(DecodeOptions()))
    problems = decoded.transform(problems_of).collect()
    assert [(p.stage, p.offset, p.code, p.severity, p.event_type_name) for p in problems] == [
        ("gold", first_rows["offset"], "UNKNOWN_TABLE_ID", "error", "WRITE_ROWS_V1")
    ]
    assert problems[0].body == first_rows["body"]
    changes = decoded.transform(changes_of)
    assert changes.where(F.col("offset") == first_rows["offset"]).count() == 0
    assert changes.count() == 20 - 3  # the other rows events of the file decode as before


def test_tables_mysql_tells_apart_never_share_a_gold_table() -> None:
    assert gold_table_name("shop", "order_items") == "shop__order_items"
    pairs = [("a__b", "c"), ("a", "b__c"), ("shop", "orders"), ("shop", "Orders"), ("Shop", "orders"), ("s", "o-x")]
    names = [gold_table_name(schema, table) for schema, table in pairs]
    assert len(set(names)) == len(pairs)
    assert all(re.fullmatch(r"[a-z0-9_]+", name) for name in names)
    assert names[3].startswith("shop__orders__h") and gold_table_name("shop", "Orders") == names[3]


def test_a_json_document_fills_the_typed_field_and_json_diffs_its_raw_companion(spark: SparkSession) -> None:
    diffs = '{"json_diffs": [{"op": "REPLACE", "path": "$.age", "value": "26"}]}'
    names, kinds = ["id", "doc"], ["int:int", "json:string"]
    changes = spark.createDataFrame(
        [
            _change(0, "insert", None, '{"id": 1, "doc": "{\\"age\\": 25}"}', column_names=names, column_kinds=kinds),
            _change(
                1,
                "update",
                '{"id": 1}',
                '{"id": 1, "doc": ' + diffs + "}",
                column_names=names,
                column_kinds=kinds,
                undecoded_after=["doc"],
                absent_before=["doc"],
            ),
        ],
        CHANGES,
    )
    layout = table_layout([(names, kinds)])
    got = changes.transform(typed_changes(layout)).orderBy("row_index").select("after.*").collect()
    assert [tuple(r) for r in got] == [
        (1, '{"age": 25}', None),
        (1, None, json.dumps(json.loads(diffs), separators=(",", ":"))),
    ]
