"""Gold transforms in Spark over real binlogs: the join to the map bronze recorded, the decode in
``mapInArrow``, the projections into ``changes``, the typed tables and the quarantine; and the
typed layout of a table whose columns change.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import DecimalType, IntegerType, StringType, StructField, StructType, TimestampType

from binlog_core.columns import DecodeOptions
from pipelines.gold.decode import PLAN_COLUMNS
from pipelines.gold.names import gold_table_name
from pipelines.gold.transforms import (
    changes_of,
    decode_rows_events,
    problems_of,
    rows_input,
    table_layout,
    typed_of,
    with_row_counts,
)
from pipelines.tables import BINLOG_EVENTS, CHANGES, QUARANTINE, TABLE_ID_LIFECYCLE, typed_change_table
from tests.fixtures.truth import FIXTURES, load_variant
from tests.harness.corpus import corpus_path
from tests.pipelines.gold.inputs import SERVER, GoldInputs, framed, gold_inputs

SAMPLE_2 = FIXTURES / "sample" / "mysql-bin.000002"
PAYLOAD = "mysql-binlog-connector-rust/mysql-bin.000057"
"""MySQL 8.0 with binlog_transaction_compression: TABLE_MAP and rows events inside TRANSACTION_PAYLOADs."""


def events_frame(spark: SparkSession, paths: list[Path]) -> tuple[DataFrame, list[dict[str, Any]]]:
    """Bronze ``binlog_events`` rows of ``paths`` (bronze's framing) as a frame, and as dicts."""
    rows = []
    for path in paths:
        events, _ = framed(path)
        for e in events:
            micros = e["commit_timestamp"]
            rows.append(
                {
                    **e,
                    "commit_timestamp": None if micros is None else datetime.fromtimestamp(micros / 1e6, UTC),
                    "xid": None if e["xid"] is None else Decimal(e["xid"]),
                    "run_id": "bronze-run",
                }
            )
    return spark.createDataFrame(rows, BINLOG_EVENTS.schema), rows


@pytest.mark.corpus
def test_each_rows_event_gets_the_plan_of_the_map_bronze_recorded_for_it(spark: SparkSession) -> None:
    events, rows = events_frame(spark, [SAMPLE_2, corpus_path(PAYLOAD)])
    maps = [r for r in rows if r["event_class"] == "table_map"]
    dropped = maps[3]  # as if it had not decoded: silver has no row for it
    keys = spark.createDataFrame(
        [(m["file"], m["offset"], m["inner_index"], f"plan@{m['offset']}#{m['inner_index']}") for m in maps
         if m is not dropped],
        "file string, offset long, inner_index int, plan_key string",
    )  # fmt: skip
    got = {
        (r.file, r.offset, r.inner_index): r.plan_key
        for r in rows_input(events.where("event_class = 'rows'"), keys).collect()
    }
    rows_events = [r for r in rows if r["event_class"] == "rows"]
    expected = {
        (r["file"], r["offset"], r["inner_index"]): None
        if (r["map_offset"], r["map_inner_index"]) == (dropped["offset"], dropped["inner_index"])
        and r["file"] == dropped["file"]
        else f"plan@{r['map_offset']}#{r['map_inner_index']}"
        for r in rows_events
    }
    assert got == expected
    assert Counter(v is None for v in got.values()) == {False: len(rows_events) - dropped["rows_events"], True: 1}
    assert any(k[2] is not None for k, v in got.items() if v is not None)  # inner events joined on their index


@pytest.fixture(scope="module")
def decoded(spark: SparkSession) -> Iterator[tuple[GoldInputs, DataFrame]]:
    """The rows events of sample file 2 decoded in Spark; the first one without a map in force."""
    inputs = gold_inputs([SAMPLE_2])
    rows = [{**inputs.rows[0], "plan_key": None}, *inputs.rows[1:]]
    frame = spark.createDataFrame(
        [
            {
                **r,
                "commit_timestamp": None
                if r["commit_timestamp"] is None
                else datetime.fromtimestamp(r["commit_timestamp"] / 1e6, UTC),
            }
            for r in rows
        ],
        from_arrow_schema(inputs.batch(rows).schema),
    )
    out = frame.transform(
        decode_rows_events(inputs.plans, inputs.images, inputs.tables, {str(SAMPLE_2): SERVER}, DecodeOptions())
    ).persist()
    yield inputs, out
    out.unpersist()


def plan_columns(spark: SparkSession, inputs: GoldInputs) -> DataFrame:
    """The plans' column names and kinds, as the gold stage hands them to :func:`changes_of`."""
    return spark.createDataFrame([(k, *columns) for k, columns in inputs.columns.items()], PLAN_COLUMNS)


def test_changes_hold_every_decoded_row_change_with_the_changes_columns(
    spark: SparkSession, decoded: tuple[GoldInputs, DataFrame]
) -> None:
    inputs, out = decoded
    changes = out.transform(changes_of("gold-run", plan_columns(spark, inputs)))
    assert changes.columns == CHANGES.names
    rows = changes.collect()
    truth = [c for c in load_variant("sample").changes if c.file == SAMPLE_2.name]
    first = inputs.rows[0]
    lost = [r for b in inputs.decode([first]) for r in b.to_pylist() if r["kind"] == "change"]
    assert len(lost) >= 1
    assert len(rows) == len(truth) - len(lost)
    assert all(r.offset != first["offset"] for r in rows)
    assert {r.run_id for r in rows} == {"gold-run"} and {r.server for r in rows} == {SERVER}
    # each change names its table's columns, in order, and their kinds, one per column
    shapes = {c.shape.table: c.shape.names for c in truth}
    assert {(r.table_name, tuple(r.column_names)) for r in rows} == {(t, tuple(n)) for t, n in shapes.items()}
    assert all(len(r.column_kinds) == len(r.column_names) and all(r.column_kinds) for r in rows)


def test_each_typed_table_gets_its_own_tables_rows_in_its_own_struct(
    spark: SparkSession, decoded: tuple[GoldInputs, DataFrame]
) -> None:
    inputs, out = decoded
    counts = {}
    for index, name in enumerate(inputs.tables):
        spec = typed_change_table(name, inputs.images[index])
        typed = out.transform(typed_of(index, spec, "gold-run"))
        assert typed.columns == spec.names
        assert typed.schema["after"].dataType == inputs.images[index]
        counts[name] = typed.count()
    changes = out.transform(changes_of("gold-run", plan_columns(spark, inputs)))
    per_table = changes.groupBy("schema_name", "table_name").count().collect()
    assert counts == {gold_table_name(r.schema_name, r.table_name): r["count"] for r in per_table}
    assert sorted(counts) == ["shop__carts", "shop__customers", "shop__order_items", "shop__orders", "shop__products"]


def test_a_rows_event_without_a_map_becomes_one_gold_quarantine_row(decoded: tuple[GoldInputs, DataFrame]) -> None:
    inputs, out = decoded
    first = inputs.rows[0]
    rows = out.transform(problems_of("gold-run")).collect()
    assert [(r.stage, r.file, r.offset, r.event_type_name, r.code, r.severity, r.run_id) for r in rows] == [
        ("gold", str(SAMPLE_2), first["offset"], "UPDATE_ROWS_V1", "UNKNOWN_TABLE_ID", "error", "gold-run")
    ]
    assert bytes(rows[0].body) == first["body"]
    assert list(rows[0].asDict()) == QUARANTINE.names


def test_lifecycle_rows_are_the_changes_counted_per_id_and_zero_for_an_id_without_any(spark: SparkSession) -> None:
    lifecycle = spark.createDataFrame(
        [
            ("f1", "mysql-bin.000001", 10, ["shop.orders"], 4, 900, 2, 5, None, ["x"], False, False, "s"),
            ("f1", "mysql-bin.000001", 11, ["shop.items"], 50, 700, 1, 0, None, ["y"], False, False, "s"),
            ("f2", "mysql-bin.000002", 10, ["shop.orders"], 4, 300, 1, 1, None, ["x"], False, False, "s"),
        ],
        TABLE_ID_LIFECYCLE.schema,
    )
    counts = spark.createDataFrame([("f1", 10, 7), ("f2", 10, 3)], "file string, table_id long, counted long")
    out = lifecycle.transform(with_row_counts(counts))
    assert out.columns == TABLE_ID_LIFECYCLE.names
    assert sorted((r.file, r.table_id, r.rows) for r in out.collect()) == [("f1", 10, 7), ("f1", 11, 0), ("f2", 10, 3)]


def test_a_changed_type_gets_its_own_field_and_a_stored_table_keeps_its_fields() -> None:
    layout = table_layout(
        [
            (["id", "a", "at"], ["int:int", "int:int", "datetime:timestamp_ntz"]),
            (["id", "a", "at"], ["int:int", "int:bigint", "timestamp:timestamp"]),  # MODIFY a BIGINT, at TIMESTAMP
            (["id", "a"], ["int:int", "int:bigint"]),  # DROP COLUMN at: its fields stay
        ]
    )
    assert layout.struct_type().simpleString() == (
        "struct<id:int,a:int,at:timestamp_ntz,at__raw:string,a__bigint:bigint,at__timestamp:timestamp,"
        "at__timestamp__raw:string>"
    )
    assert layout.routes(["id", "a"], ["int:int", "int:bigint"]) == ((0, None), (4, None))
    assert layout.routes(["id", "a", "at"], ["int:int", "int:int", "datetime:timestamp_ntz"]) == (
        (0, None),
        (1, None),
        (2, 3),
    )
    stored = StructType(
        [
            StructField("id", IntegerType()),
            StructField("price", DecimalType(10, 2)),
            StructField("when", TimestampType()),
            StructField("when__raw", StringType()),
        ]
    )
    again = table_layout([(["id", "price", "qty"], ["int:bigint", "decimal:decimal(10,2)", "int:int"])], stored)
    assert again.struct_type().simpleString() == (
        "struct<id:int,price:decimal(10,2),when:timestamp,when__raw:string,id__bigint:bigint,qty:int>"
    )


def test_a_column_no_field_can_hold_is_refused_never_coerced() -> None:
    stored = StructType([StructField("a", IntegerType()), StructField("a__bigint", StringType())])
    with pytest.raises(ValueError, match="column 'a': no field fits kind 'int:bigint'"):
        table_layout([(["a"], ["int:bigint"])], stored)


def test_tables_mysql_tells_apart_never_share_a_gold_table() -> None:
    assert gold_table_name("shop", "order_items") == "shop__order_items"
    pairs = [("a__b", "c"), ("a", "b__c"), ("shop", "orders"), ("shop", "Orders"), ("Shop", "orders"), ("s", "o-x")]
    names = [gold_table_name(schema, table) for schema, table in pairs]
    assert len(set(names)) == len(pairs)
    assert all(re.fullmatch(r"[a-z0-9_]+", name) for name in names)
    assert names[3].startswith("shop__orders__h") and gold_table_name("shop", "Orders") == names[3]
