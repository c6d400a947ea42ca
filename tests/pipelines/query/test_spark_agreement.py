"""The embedded engine answers analysts' queries over the sample lakehouse exactly as Spark does.

Each statement runs through Spark (its catalog, the tables registered by the pipeline) and through
``EmbeddedEngine`` (DuckDB over delta-rs snapshots, no catalog); the rows must be equal as Python
values: decimals, timestamps (instants compare equal whatever their zone object), binary, structs
and arrays. Only the order of rows of a statement without a final ORDER BY is normalised.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.query.engine import EmbeddedEngine
from pipelines.query.lake import LakeTables
from pipelines.query.spark import spark_result
from pipelines.storage import Lakehouse
from pipelines.tables import CATALOGED
from tests.harness.sample_lake import SampleLake

UTC = dt.UTC

ORDERED = {
    "changes per table and op": """
        SELECT schema_name, table_name, op, count(*) AS n FROM binlog_gold.changes
        GROUP BY schema_name, table_name, op ORDER BY schema_name, table_name, op""",
    "struct fields of a typed gold table (the README's query)": """
        SELECT op, after.id, after.total, commit_timestamp FROM binlog_gold.shop__orders
        ORDER BY file, offset, row_index""",
    "decimals with NULL before images": """
        SELECT op, after.id, before.total, after.total, after.total - before.total AS delta
        FROM binlog_gold.shop__orders ORDER BY file, offset, row_index""",
    "whole structs": "SELECT before, after FROM binlog_gold.shop__customers ORDER BY file, offset, row_index",
    "a join of two gold tables": """
        SELECT o.after.id AS order_id, c.after.email, c.after.country, o.after.total
        FROM binlog_gold.shop__orders o JOIN binlog_gold.shop__customers c ON o.after.customer_id = c.after.id
        WHERE o.op = 'update' AND c.op = 'insert' ORDER BY order_id, o.offset""",
    "a join and an aggregate over the same table twice": """
        WITH updated AS (SELECT after.id AS id FROM binlog_gold.shop__orders WHERE op = 'update')
        SELECT o.op, count(*) AS n, sum(o.after.total) AS total FROM binlog_gold.shop__orders o
        WHERE o.after.id IN (SELECT id FROM updated) GROUP BY o.op ORDER BY o.op""",
    "timestamp filters with literals and strings": """
        SELECT count(*), min(commit_timestamp), max(event_timestamp) FROM binlog_gold.changes
        WHERE commit_timestamp >= '2023-11-14 22:14:00' AND commit_timestamp < TIMESTAMP '2023-11-14 22:15:00'""",
    "a timestamp inside a struct": """
        SELECT after.id, after.ordered_at FROM binlog_gold.shop__orders
        WHERE op = 'insert' AND after.ordered_at BETWEEN '2024-03-01 12:00:00' AND '2024-03-02'
        ORDER BY after.ordered_at, after.id""",
    "changes per hour": """
        SELECT date_trunc('HOUR', commit_timestamp) AS hour, count(*) AS n FROM binlog_gold.changes
        GROUP BY 1 ORDER BY 1""",
    "JSON text of the changes table": """
        SELECT get_json_object(after, '$.status') AS status, count(*) AS n FROM binlog_gold.changes
        WHERE table_name = 'orders' GROUP BY 1 ORDER BY 1""",
    "backquoted names and a double-quoted string": """
        SELECT `op`, count(*) FROM `binlog_gold`.`shop__orders` WHERE `op` <> "delete" GROUP BY `op` ORDER BY `op`""",
    "bronze events against silver table maps": """
        SELECT e.event_type_name, count(*) AS events, count(m.table_id) AS maps
        FROM binlog_bronze.binlog_events e
        LEFT JOIN binlog_silver.table_maps m ON e.file = m.file AND e.offset = m.offset
        GROUP BY e.event_type_name ORDER BY e.event_type_name""",
    "bronze files with their DDL from silver": """
        SELECT f.file_name, f.status, f.event_count, count(d.offset) AS ddl
        FROM binlog_bronze.binlog_files f LEFT JOIN binlog_silver.ddl_events d ON d.file = f.file AND d.kind = 'DDL'
        GROUP BY f.file_name, f.status, f.event_count ORDER BY f.file_name""",
    "binary bodies": """
        SELECT file_name, offset, body, length(body), hex(body) FROM binlog_bronze.binlog_events
        ORDER BY file, offset, inner_index LIMIT 40""",
    "arrays": """
        SELECT absent_after, column_names, size(column_names) FROM binlog_gold.changes
        ORDER BY file, offset, row_index LIMIT 40""",
    "quality gate results": """
        SELECT gate, `check`, success, action, observed FROM binlog_quality.gate_results ORDER BY gate, `check`""",
    "timestamp_ntz, partitions and an added struct field": "SELECT * FROM binlog_gold.typed_probe ORDER BY id",
    "a timestamp_ntz filter": """
        SELECT id, after.seen, after.note FROM binlog_gold.typed_probe WHERE wall_clock < '2024-01-01' ORDER BY id""",
}

UNORDERED = {
    "distinct tables": "SELECT DISTINCT schema_name, table_name FROM binlog_gold.changes",
    "partitions": "SELECT part, count(*) FROM binlog_gold.typed_probe GROUP BY part",
    "quarantine codes": "SELECT code, count(*) FROM binlog_bronze.quarantine GROUP BY code",
    "schema history": "SELECT schema_name, table_name, version, source FROM binlog_silver.schema_history",
}


@pytest.fixture(scope="module")
def engines(spark: SparkSession, sample_lake: SampleLake) -> tuple[SparkSession, EmbeddedEngine]:
    """The Spark session with this lake's names registered, and an embedded engine over the lake."""
    sample_lake.register(spark)
    return spark, EmbeddedEngine(LakeTables(sample_lake.cfg.storage.root, sample_lake.cfg.storage.layers()))


def _both(engines: tuple[SparkSession, EmbeddedEngine], statement: str) -> tuple[list[Any], list[Any]]:
    spark, embedded = engines
    mine = embedded.execute(statement)
    assert mine is not None
    return spark_result(spark, statement).rows(), mine.rows()


@pytest.mark.parametrize("statement", list(ORDERED.values()), ids=list(ORDERED))
def test_an_ordered_query_gives_spark_s_rows_in_spark_s_order(
    engines: tuple[SparkSession, EmbeddedEngine], statement: str
) -> None:
    expected, actual = _both(engines, statement)
    assert expected, "the query must select something to compare"
    assert actual == expected


@pytest.mark.parametrize("statement", list(UNORDERED.values()), ids=list(UNORDERED))
def test_a_query_without_order_gives_spark_s_rows(engines: tuple[SparkSession, EmbeddedEngine], statement: str) -> None:
    expected, actual = _both(engines, statement)
    assert sorted(actual, key=repr) == sorted(expected, key=repr)


def test_every_table_of_every_layer_counts_the_same_rows(
    engines: tuple[SparkSession, EmbeddedEngine], sample_lake: SampleLake
) -> None:
    spark, embedded = engines
    lake = Lakehouse(spark, sample_lake.cfg.storage)
    names = [
        f"{lake.database(layer)}.{name}"
        for layer in CATALOGED
        for name in lake.tables(layer)
        if not name.startswith("_")
    ]
    counts = {}
    for name in names:
        result = embedded.execute(f"SELECT count(*) FROM {name}")
        assert result is not None
        counts[name] = result.rows()[0][0]
    expected = {name: spark.table(name).count() for name in names}

    assert counts == expected
    assert len(names) == 15  # 3 bronze, 4 silver, 6 gold + the probe, 1 quality
    assert counts["binlog_gold.changes"] == 366
    assert counts["binlog_gold.shop__orders"] == 98


def test_typed_values_come_back_as_written(engines: tuple[SparkSession, EmbeddedEngine]) -> None:
    _, embedded = engines
    result = embedded.execute("SELECT id, wall_clock, after, raw, day FROM binlog_gold.typed_probe ORDER BY id")
    assert result is not None
    assert result.types[1] == "TIMESTAMP"  # timestamp_ntz: a wall-clock time, no zone
    assert result.rows() == [
        (
            1,
            dt.datetime(2024, 3, 1, 10, 29, 0, 46000),
            {"total": Decimal("12.50"), "seen": dt.datetime(2024, 3, 1, 23, 59, 59, 999999), "note": None},
            b"\x00\xff",
            dt.date(2024, 3, 1),
        ),
        (2, None, {"total": None, "seen": None, "note": None}, None, dt.date(2024, 3, 2)),
        (
            3,
            dt.datetime(1999, 12, 31, 23, 59, 59),
            {"total": Decimal("-0.01"), "seen": dt.datetime(2000, 1, 1), "note": "tab\there"},
            b"",
            dt.date(1999, 12, 31),
        ),
    ]


def test_a_zoned_timestamp_is_the_instant_spark_wrote(engines: tuple[SparkSession, EmbeddedEngine]) -> None:
    _, embedded = engines
    result = embedded.execute(
        "SELECT min(commit_timestamp), max(commit_timestamp) FROM binlog_gold.changes WHERE table_name = 'orders'"
    )
    assert result is not None
    assert result.types == ("TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE")
    first, last = result.rows()[0]
    assert first.utcoffset() == dt.timedelta(0)
    assert (first.astimezone(UTC), last.astimezone(UTC)) == (
        dt.datetime(2023, 11, 14, 22, 13, 36, tzinfo=UTC),
        dt.datetime(2023, 11, 14, 22, 17, 34, tzinfo=UTC),
    )
