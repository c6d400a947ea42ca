"""Gold transforms in Spark over real binlogs: the join to the map bronze recorded, the row counts of
the table-id lifecycle; and the typed layout of a table whose columns change.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DecimalType, IntegerType, StringType, StructField, StructType, TimestampType

from pipelines.gold.names import gold_table_name
from pipelines.gold.transforms import rows_input, table_layout, with_row_counts
from pipelines.tables import BINLOG_EVENTS, TABLE_ID_LIFECYCLE
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path
from tests.pipelines.gold.inputs import framed

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
