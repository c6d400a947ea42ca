"""Fact frames of the quality gates, computed on tiny hand-made frames."""

from __future__ import annotations

from pipelines.quality.facts import bronze_facts, gold_facts
from pyspark.sql import SparkSession

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

    assert (row.offset_gaps, row.unexplained_tail, row.unreadable) == (1, 0, 0)


def test_bronze_facts_expect_a_resumed_file_to_start_where_it_was_resumed(spark: SparkSession) -> None:
    # F1 grew and was continued at 4211 (the end of its last complete event of the previous run);
    # F2 was continued at 900, but its first new event starts at 950: 50 bytes were skipped
    events = spark.createDataFrame(
        [
            (F1, 4211, None, 100, True, "MARIADB_GTID"),
            (F1, 4311, None, 31, True, "XID"),
            (F2, 950, None, 40, True, "QUERY"),
        ],
        EVENT_COLS,
    )
    files = spark.createDataFrame([(F1, "complete", 4342, 4342), (F2, "complete", 990, 990)], FILE_COLS)

    resumed = {r.file: r.offset_gaps for r in bronze_facts(events, files, {F1: 4211, F2: 900}).collect()}
    whole = {r.file: r.offset_gaps for r in bronze_facts(events, files).collect()}

    assert resumed == {F1: 0, F2: 1}
    assert whole == {F1: 1, F2: 1}  # framed from the start, a file's first event is at offset 4


def test_only_corrupt_encrypted_and_foreign_files_are_unreadable_not_a_truncated_tail(spark: SparkSession) -> None:
    statuses = ["complete", "truncated", "corrupt", "encrypted", "not_a_binlog"]
    files = spark.createDataFrame([(f"/in/{s}", s, 4, 4) for s in statuses], FILE_COLS)
    events = spark.createDataFrame([], EVENT_COLS)

    facts = {r.file: (r.unreadable, r.unexplained_tail) for r in bronze_facts(events, files).collect()}

    assert facts == {
        "/in/complete": (0, 0),
        "/in/truncated": (0, 0),
        "/in/corrupt": (1, 0),
        "/in/encrypted": (1, 0),
        "/in/not_a_binlog": (1, 0),
    }


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
