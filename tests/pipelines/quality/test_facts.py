"""Fact frames of the quality gates, computed on tiny hand-made frames."""

from __future__ import annotations

from pyspark.sql import SparkSession

from pipelines.quality.facts import bronze_facts, gold_facts

F1, F2 = "/in/mysql-bin.000001", "/in/mysql-bin.000002"
EVENT_COLS = "file string, offset long, inner_index int, event_size long, checksum_ok boolean, event_type_name string"
FILE_COLS = "file string, status string, framed_until long, size long"


def test_bronze_facts_count_an_offset_gap_a_tail_checksum_failures_and_unknown_events(spark: SparkSession) -> None:
    events = spark.createDataFrame(
        [
            (F1, 4, None, 100, True, "FORMAT_DESCRIPTION"),
            (F1, 104, None, 50, True, "QUERY"),
            (F1, 154, None, 20, True, "XID"),
            (F2, 4, None, 100, True, "FORMAT_DESCRIPTION"),
            (F2, 110, None, 30, False, "UNKNOWN_200"),  # starts 6 bytes after the previous event ends
        ],
        EVENT_COLS,
    )
    files = spark.createDataFrame([(F1, "complete", 174, 174), (F2, "complete", 140, 150)], FILE_COLS)

    facts = {r.file: r.asDict() for r in bronze_facts(events, files).collect()}

    assert facts[F1] == {
        "file": F1,
        "unexplained_tail": 0,
        "unreadable": 0,
        "offset_gaps": 0,
        "checksum_failures": 0,
        "unknown_events": 0,
    }
    assert facts[F2] == {
        "file": F2,
        "unexplained_tail": 1,
        "unreadable": 0,
        "offset_gaps": 1,
        "checksum_failures": 1,
        "unknown_events": 1,
    }


def test_bronze_facts_count_a_first_event_not_at_offset_4_as_a_gap(spark: SparkSession) -> None:
    events = spark.createDataFrame([(F1, 10, None, 100, True, "FORMAT_DESCRIPTION")], EVENT_COLS)
    files = spark.createDataFrame([(F1, "truncated", 110, 120)], FILE_COLS)

    [row] = bronze_facts(events, files).collect()

    assert (row.offset_gaps, row.unexplained_tail, row.unreadable) == (1, 0, 1)


def test_gold_facts_find_op_image_mismatches_lost_rows_events_and_unknown_tables(spark: SparkSession) -> None:
    events = spark.createDataFrame(
        [
            (F1, 100, None, 30, True),  # WRITE_ROWS: two changes
            (F1, 200, None, 32, True),  # DELETE_ROWS decoded with an after image: op mismatch
            (F1, 300, None, 31, True),  # UPDATE_ROWS: quarantined (unknown table id)
            (F1, 400, None, 30, True),  # WRITE_ROWS: neither decoded nor quarantined
            (F1, 500, None, 30, False),  # checksum failed: not expected in gold
            (F1, 600, None, 2, True),  # QUERY: not a rows event
        ],
        "file string, offset long, inner_index int, event_type int, checksum_ok boolean",
    )
    changes = spark.createDataFrame(
        [
            (F1, 100, None, "insert", None, "{a:1}"),
            (F1, 100, None, "insert", None, "{a:2}"),
            (F1, 200, None, "delete", "{a:1}", "{a:9}"),
        ],
        "file string, offset long, inner_index int, op string, before string, after string",
    )
    quarantine = spark.createDataFrame(
        [(F1, 300, None, "UNKNOWN_TABLE_ID")], "file string, offset long, inner_index int, code string"
    )

    [row] = gold_facts(events, changes, quarantine).collect()

    assert row.asDict() == {
        "file": F1,
        "unreconciled_rows_events": 1,
        "op_image_mismatches": 1,
        "unknown_table_events": 1,
    }
