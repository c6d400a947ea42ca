"""Fact frames the rules check: small per-file frames computed by pure DataFrame transforms."""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from pipelines.bronze.framing import CORRUPT, ENCRYPTED, MAGIC_LEN, NOT_A_BINLOG
from pipelines.silver.decode import ROWS_EVENT_TYPES

ROWS_TYPES = [int(t) for t in ROWS_EVENT_TYPES]
UNREADABLE = (CORRUPT, ENCRYPTED, NOT_A_BINLOG)
"""Statuses of bad input. ``truncated`` is not one: a file that ends inside an event with everything
before it framed is the normal state of the server's active binlog (recorded as a warning, and
continued from its last complete event when it grows)."""


def bronze_facts(events: DataFrame, files: DataFrame, resumed: Mapping[str, int] | None = None) -> DataFrame:
    """Per file: offset gaps, an unexplained tail, checksum failures, unreadable status, unknown events.

    ``events``/``files``: the bronze ``binlog_events`` and ``binlog_files`` rows of the files checked;
    ``resumed``: files whose rows start where an earlier run stopped (file -> offset, as in
    ``BronzeOutput.resumed``). A file's first event must start at its resume offset, or right after
    the magic (offset 4) for a file framed from its start; anything else counts as a gap.

    >>> bronze_facts(events, files, {"file:/b/mysql-bin.000002": 4211}).show()
    """
    outer = events.where(F.col("inner_index").isNull())
    starts = events.sparkSession.createDataFrame(sorted((resumed or {}).items()), "file string, expected_start long")
    ordered = Window.partitionBy("file").orderBy("offset")
    expected_start = F.coalesce(F.col("expected_start"), F.lit(MAGIC_LEN))
    steps = outer.join(F.broadcast(starts), "file", "left").select(
        "file",
        (F.lead("offset").over(ordered) != F.col("offset") + F.col("event_size")).alias("gap"),
        ((F.row_number().over(ordered) == 1) & (F.col("offset") != expected_start)).alias("late_start"),
    )
    per_file = steps.groupBy("file").agg(
        F.sum(F.coalesce(F.col("gap").cast("int"), F.lit(0)) + F.col("late_start").cast("int")).alias("offset_gaps")
    )
    counts = events.groupBy("file").agg(
        F.sum((F.col("checksum_ok") == F.lit(False)).cast("int")).alias("checksum_failures"),
        F.sum(F.col("event_type_name").startswith("UNKNOWN_").cast("int")).alias("unknown_events"),
    )
    tail = (F.col("status") == "complete") & (F.col("framed_until") != F.col("size"))
    return (
        files.select(
            "file",
            tail.cast("int").alias("unexplained_tail"),
            F.col("status").isin(*UNREADABLE).cast("int").alias("unreadable"),
        )
        .join(per_file, "file", "left")
        .join(counts, "file", "left")
        .fillna(0, ["offset_gaps", "checksum_failures", "unknown_events"])
    )


def silver_facts(events: DataFrame, table_maps: DataFrame, lifecycle: DataFrame) -> DataFrame:
    """Per file: rows events without a map in force, table ids reused for another table."""
    trusted_rows = events.where(
        F.col("event_type").isin(ROWS_TYPES) & (F.col("checksum_ok").isNull() | F.col("checksum_ok"))
    )
    rows = trusted_rows.groupBy("file").agg(F.count(F.lit(1)).alias("rows_events"))
    mapped = table_maps.groupBy("file").agg(F.sum("rows_events").alias("mapped"))
    reused = lifecycle.groupBy("file").agg(
        F.sum(F.col("reused_for_other_table").cast("int")).alias("ids_reused_for_other_table")
    )
    return (
        rows.join(mapped, "file", "left")
        .join(reused, "file", "left")
        .fillna(0, ["mapped", "ids_reused_for_other_table"])
        .select(
            "file",
            (F.col("rows_events") - F.col("mapped")).alias("unmapped_rows_events"),
            "ids_reused_for_other_table",
        )
    )


def ddl_facts(ddl_events: DataFrame) -> DataFrame:
    """One row: the share of DDL statements the replay understood (1.0 when there is none)."""
    ddl = ddl_events.where(F.col("kind") == "DDL")
    return ddl.agg(
        F.coalesce(F.avg(F.col("ddl_parsed").cast("double")), F.lit(1.0)).alias("ddl_parsed_share"),
        F.count(F.lit(1)).alias("ddl_statements"),
    )


def gold_facts(events: DataFrame, changes: DataFrame, quarantine: DataFrame) -> DataFrame:
    """Per file: rows events neither decoded nor quarantined, op/image mismatches, unknown-table events."""
    key: list[str | Column] = ["file", "offset", F.coalesce("inner_index", F.lit(-1)).alias("inner_key")]
    trusted = events.where(
        F.col("event_type").isin(ROWS_TYPES) & (F.col("checksum_ok").isNull() | F.col("checksum_ok"))
    ).select(*key)
    accounted = changes.select(*key).unionByName(quarantine.where(F.col("offset").isNotNull()).select(*key))
    lost = trusted.join(accounted.distinct(), ["file", "offset", "inner_key"], "left_anti")
    lost_per_file = lost.groupBy("file").agg(F.count(F.lit(1)).alias("unreconciled_rows_events"))
    wrong_op = (
        ((F.col("op") == "insert") & (F.col("before").isNotNull() | F.col("after").isNull()))
        | ((F.col("op") == "delete") & (F.col("before").isNull() | F.col("after").isNotNull()))
        | ((F.col("op") == "update") & (F.col("before").isNull() | F.col("after").isNull()))
    )
    ops = changes.groupBy("file").agg(F.sum(wrong_op.cast("int")).alias("op_image_mismatches"))
    unknown = (
        quarantine.where(F.col("code") == "UNKNOWN_TABLE_ID")
        .groupBy("file")
        .agg(F.count(F.lit(1)).alias("unknown_table_events"))
    )
    files = events.select("file").distinct()
    return (
        files.join(lost_per_file, "file", "left")
        .join(ops, "file", "left")
        .join(unknown, "file", "left")
        .fillna(0, ["unreconciled_rows_events", "op_image_mismatches", "unknown_table_events"])
    )
