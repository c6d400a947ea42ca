"""A stage's execution settings follow the size of its input, and the session gets its own back; the
Python a stage hands Spark's workers gives the same rows when small work runs it in this process."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyspark.sql import Row, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from pipelines.execution import MIB, SMALL_WORK, ExecutionMode, apply_grouped, collect_mapped

OUT = StructType(
    [
        StructField("key", StringType(), False),
        StructField("n", LongType(), True),
        StructField("at", TimestampType(), True),
        StructField("wall", TimestampNTZType(), True),
        StructField("body", BinaryType(), True),
        StructField(
            "item", StructType([StructField("name", StringType()), StructField("tags", ArrayType(StringType()))])
        ),
        StructField("vars", MapType(StringType(), StringType()), True),
    ]
)
AT = datetime(2024, 3, 1, 10, 29, 0, 46_001, tzinfo=UTC)


def _described(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each input row as an ``OUT`` row: every kind of value a stage's task hands back."""
    for batch in batches:
        ids = batch.column("id").to_pylist()
        yield pa.RecordBatch.from_pylist(
            [
                {
                    "key": f"k{i % 2}",
                    "n": None if i == 3 else i * 10,
                    "at": AT,
                    "wall": datetime(2024, 3, 1, 23, 59, 59, 999_999),
                    "body": bytes([i, 0, 255]),
                    "item": {"name": f"t{i}", "tags": ["a", str(i)]},
                    "vars": {"time_zone": "SYSTEM", "i": str(i)},
                }
                for i in ids
            ],
            schema=to_arrow_schema(OUT, timezone="UTC"),
        )


def _name(row: Row) -> str:
    return str(row.item.name)


def _counted(group: pa.Table) -> pa.Table:
    """One group's rows -> one row: its key, how many rows and the largest ``n``."""
    return pa.table(
        {
            "key": [group.column("key")[0].as_py()],
            "rows": pa.array([group.num_rows], pa.int64()),
            "top": pa.array([pc.max(group.column("n")).as_py()], pa.int64()),
        }
    )


def _settings(spark: SparkSession) -> dict[str, str | None]:
    given = spark.conf.getAll
    return {key: given.get(key) for key in SMALL_WORK}


@pytest.fixture
def session(spark: SparkSession) -> Iterator[SparkSession]:
    before = _settings(spark)
    yield spark
    for key, value in before.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def test_a_stage_on_small_input_runs_planned_and_interpreted_until_reset(session: SparkSession) -> None:
    before = _settings(session)
    mode = ExecutionMode(session, small_work_mib=64)
    mode.fit(5_000)
    assert _settings(session) == SMALL_WORK
    assert session.range(10).selectExpr("sum(id * 2) AS s").first().s == 90  # type: ignore[union-attr]
    mode.reset()
    assert _settings(session) == before


def test_a_stage_on_input_at_the_limit_keeps_sparks_defaults(session: SparkSession) -> None:
    before = _settings(session)
    mode = ExecutionMode(session, small_work_mib=64)
    mode.fit(64 * MIB)
    assert _settings(session) == before
    mode.fit(1)
    mode.fit(64 * MIB)  # a large stage after a small one: the defaults again
    assert _settings(session) == before


def test_a_limit_of_zero_never_changes_a_setting(session: SparkSession) -> None:
    before = _settings(session)
    ExecutionMode(session, small_work_mib=0).fit(0)
    assert _settings(session) == before


def test_settings_the_session_was_given_are_left_as_they_are(session: SparkSession) -> None:
    session.conf.set("spark.sql.adaptive.enabled", "true")
    mode = ExecutionMode(session, small_work_mib=64)
    mode.fit(1)
    assert session.conf.get("spark.sql.adaptive.enabled") == "true"
    assert session.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
    mode.reset()
    assert session.conf.get("spark.sql.adaptive.enabled") == "true"
    assert "spark.sql.codegen.factoryMode" not in session.conf.getAll


def test_a_task_function_run_in_this_process_gives_the_rows_sparks_workers_give(spark: SparkSession) -> None:
    frame = spark.range(0, 6, 1, 3)
    by_spark = collect_mapped(frame, _described, OUT, here=False)
    here = collect_mapped(frame, _described, OUT, here=True)
    assert sorted(here, key=_name) == sorted(by_spark, key=_name) and len(here) == 6
    assert [type(v) for v in here[0]] == [type(v) for v in by_spark[0]]  # datetime, bytes, Row, dict
    given = pa.table({"id": pa.array(range(6), pa.int64())})  # driver data: never through Spark
    assert sorted(collect_mapped(given, _described, OUT, here=False), key=_name) == sorted(by_spark, key=_name)


def test_groups_replayed_in_this_process_make_the_frame_sparks_workers_make(spark: SparkSession) -> None:
    rows = spark.createDataFrame(collect_mapped(spark.range(0, 7, 1, 2), _described, OUT, here=False), OUT)
    schema = StructType(
        [StructField("key", StringType()), StructField("rows", LongType()), StructField("top", LongType())]
    )
    by_spark = apply_grouped(rows, "key", _counted, schema, here=False)
    here = apply_grouped(rows, "key", _counted, schema, here=True)
    assert here.schema == by_spark.schema == schema
    assert sorted(here.collect()) == sorted(by_spark.collect()) == [("k0", 4, 60), ("k1", 3, 50)]
