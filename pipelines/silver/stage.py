"""The silver stage: table maps, table-id lifecycle, QUERY/DDL events and schema history.

``build_silver`` reads the bronze events of the files silver has still to (re)build
(``pending_files(lake, Layer.SILVER)``, whole files) and decodes TABLE_MAP and QUERY bodies,
never the row images:

* ``table_maps``: every TABLE_MAP decoded (``mapInArrow``), its in-force range and the rows
  events read with it computed by window functions per file
  (:func:`pipelines.silver.transforms.with_in_force`), and the columns valid at its position
  (:func:`pipelines.silver.transforms.resolve_columns`: what gold names columns with);
* ``table_id_lifecycle``: per file and table id, aggregated from the maps;
* ``ddl_events``: every QUERY-shaped event (``mapInArrow``), DDL with the objects it touches
  and whether the replay understood it (the parse coverage);
* ``schema_history``: rebuilt over all files from the seed snapshot (``silver.seed_path``), the
  DDL of every file replayed in order (files by path, then offset) and the shapes the table maps
  show (:mod:`pipelines.silver.history`); small, so it is replaced as a whole on each run.

Decoding failures go to the quarantine table with ``stage = 'silver'``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from binlog_core.events import QUERY_SHAPED
from conf.models import AppConfig
from pipelines.bronze.schema import BINLOG_EVENTS, QUARANTINE
from pipelines.progress import file_predicate, pending_files, record_progress
from pipelines.silver.ddl import DdlResult, SchemaRegistry, parse_seed
from pipelines.silver.decode import query_rows, table_map_rows
from pipelines.silver.history import Position, replay_history
from pipelines.silver.schema import DDL_EVENTS, SCHEMA_HISTORY, TABLE_MAPS
from pipelines.silver.transforms import (
    TABLE_MAP,
    conform,
    inner_key,
    lifecycle,
    quarantine_of,
    resolve_columns,
    shape_changes,
    trusted,
    with_in_force,
)
from pipelines.storage import Lakehouse, Layer, Persisted, Table

EVENTS = Table.bronze("binlog_events")
QUARANTINE_TABLE = Table.bronze("quarantine")
TABLE_MAPS_TABLE = Table.silver("table_maps")
LIFECYCLE_TABLE = Table.silver("table_id_lifecycle")
DDL_TABLE = Table.silver("ddl_events")
HISTORY_TABLE = Table.silver("schema_history")

_ERRORS = [
    StructField("problem_code", StringType(), True),
    StructField("problem_severity", StringType(), True),
    StructField("problem_message", StringType(), True),
    StructField("problem_path", StringType(), True),
    StructField("event_type_name", StringType(), True),
]


def _nullable(fields: list[StructField]) -> StructType:
    """The fields, all nullable (decoder output mixes decoded rows and error rows)."""
    return StructType([StructField(f.name, f.dataType, True) for f in fields])


MAPS_OUT = _nullable([f for f in TABLE_MAPS.fields] + _ERRORS)
"""Decoded TABLE_MAPs (``table_maps`` columns) and error rows (``problem_*`` set, ``body`` kept)."""
QUERIES_OUT = _nullable(
    [f for f in DDL_EVENTS.fields if f.name != "event_type_name"]
    + _ERRORS
    + [StructField("body", BINLOG_EVENTS["body"].dataType, True)]
)
"""Decoded QUERY events (``ddl_events`` columns, no replay yet) and error rows."""


@dataclass
class SilverOutput:
    """What one silver build produced (frames persisted) for ``files``."""

    files: list[str]
    table_maps: DataFrame
    table_id_lifecycle: DataFrame
    ddl_events: DataFrame
    schema_history: DataFrame
    quarantine: DataFrame
    kept: Persisted = field(default_factory=Persisted)

    def unpersist(self) -> None:
        """Release the persisted frames (once written; the frames are recomputed if used again)."""
        self.kept.release()


def decode_table_maps(events: DataFrame) -> DataFrame:
    """Bronze events -> decoded TABLE_MAPs (:data:`MAPS_OUT`), error rows included; no ranges yet."""
    maps = trusted(events).where(F.col("event_type") == TABLE_MAP)
    arrow_schema = to_arrow_schema(MAPS_OUT)

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return table_map_rows(batches, arrow_schema)

    return maps.mapInArrow(per_partition, MAPS_OUT)


def decode_queries(events: DataFrame) -> DataFrame:
    """Bronze QUERY-shaped events -> :data:`QUERIES_OUT` rows (DDL replay not applied yet)."""
    queries = trusted(events).where(F.col("event_type").isin(sorted(int(t) for t in QUERY_SHAPED)))
    arrow_schema = to_arrow_schema(QUERIES_OUT)

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return query_rows(batches, arrow_schema)

    return queries.mapInArrow(per_partition, QUERIES_OUT)


def _load_seed(spark: SparkSession, cfg: AppConfig) -> SchemaRegistry | None:
    """The seed snapshot of ``silver.seed_path`` (a local path or any URI Spark reads), or None."""
    path = cfg.silver.seed_path
    if path is None:
        return None
    if "://" not in path:
        return parse_seed(Path(path.removeprefix("file:")).read_text(encoding="utf-8"))
    first = spark.read.text(path, wholetext=True).first()
    return parse_seed("" if first is None else first[0])


def _attach_replay(spark: SparkSession, queries: DataFrame, results: dict[Position, DdlResult]) -> DataFrame:
    """``ddl_events`` rows: the decoded queries with each DDL's replay result (objects, parse outcome)."""
    rows = [
        {
            "file": key[0],
            "offset": key[1],
            "inner_key": key[2],
            "r_objects": [{"schema_name": s, "object_name": o, "action": a} for s, o, a in r.objects],
            "r_parsed": r.error is None,
            "r_error": r.error,
        }
        for key, r in results.items()
    ]
    schema = StructType(
        [
            StructField("file", StringType(), False),
            StructField("offset", LongType(), False),
            StructField("inner_key", IntegerType(), False),
            StructField("r_objects", DDL_EVENTS["objects"].dataType, True),
            StructField("r_parsed", DDL_EVENTS["ddl_parsed"].dataType, True),
            StructField("r_error", StringType(), True),
        ]
    )
    replayed = spark.createDataFrame(rows, schema)
    joined = queries.withColumn("inner_key", inner_key()).join(
        F.broadcast(replayed), ["file", "offset", "inner_key"], "left"
    )
    return (
        joined.withColumn("objects", F.col("r_objects"))
        .withColumn("ddl_parsed", F.col("r_parsed"))
        .withColumn("ddl_error", F.col("r_error"))
        .transform(conform(DDL_EVENTS))
    )


def _ddl_rows(old_ddl: DataFrame, new_queries: DataFrame) -> list[dict[str, Any]]:
    """The DDL statements of every file (small: collected for the replay)."""
    cols = ["file", "offset", "inner_index", "default_schema", "statement"]
    both = (
        old_ddl.where(F.col("kind") == "DDL")
        .select(*cols)
        .unionByName(new_queries.where(F.col("kind") == "DDL").select(*cols))
    )
    return [r.asDict() for r in both.where(F.col("statement").isNotNull()).collect()]


def _shape_rows(all_maps: DataFrame) -> list[dict[str, Any]]:
    """The maps where a table's shape may change, collected for the replay (few rows)."""
    return [{**r.asDict(), "columns": [c.asDict() for c in r.columns]} for r in shape_changes(all_maps).collect()]


def build_silver(spark: SparkSession, cfg: AppConfig, lake: Lakehouse) -> SilverOutput:
    """Decode the metadata of every file pending for silver (see the module doc)."""
    files = pending_files(lake, Layer.SILVER)
    predicate = file_predicate(files)
    events = lake.read_or_empty(EVENTS, BINLOG_EVENTS).where(predicate)
    markers = events.select("file", "offset", "inner_index", "event_type", "table_id", "statement_end", "checksum_ok")
    kept = Persisted()
    maps_out = kept.keep(decode_table_maps(events))
    queries_out = kept.keep(decode_queries(events))
    new_maps = kept.keep(
        maps_out.where(F.col("problem_code").isNull()).transform(with_in_force(markers)).transform(conform(TABLE_MAPS))
    )
    new_queries = queries_out.where(F.col("problem_code").isNull())
    # DDL and map shapes of every file (other files' from silver, pending ones' from this build)
    old_ddl = lake.read_or_empty(DDL_TABLE, DDL_EVENTS).where(f"NOT ({predicate})")
    ddl = _ddl_rows(old_ddl, new_queries)
    shape_columns = ["file", "offset", "inner_index", "schema_name", "table_name", "fingerprint"]
    shape_columns += ["column_names", "columns"]
    old_maps = lake.read_or_empty(TABLE_MAPS_TABLE, TABLE_MAPS).where(f"NOT ({predicate})")
    all_maps = old_maps.select(*shape_columns).unionByName(new_maps.select(*shape_columns))
    history_rows, results = replay_history(_load_seed(spark, cfg), ddl, _shape_rows(all_maps))
    history = kept.keep(spark.createDataFrame(history_rows, SCHEMA_HISTORY))
    table_maps = kept.keep(new_maps.transform(resolve_columns(history)).transform(conform(TABLE_MAPS)))
    ddl_events = kept.keep(_attach_replay(spark, new_queries, results))
    quarantine = kept.keep(quarantine_of(maps_out).unionByName(quarantine_of(queries_out)))
    lifecycle_out = kept.keep(lifecycle(table_maps))
    return SilverOutput(files, table_maps, lifecycle_out, ddl_events, history, quarantine, kept)


def write_silver(lake: Lakehouse, out: SilverOutput) -> None:
    """Replace the rows of ``out.files`` in each silver table, the history as a whole, then record progress.

    Nothing is written when no file was pending: a run with nothing new leaves every version as it is.
    """
    if not out.files:
        return
    predicate = file_predicate(out.files)
    lake.replace_where(out.table_maps, TABLE_MAPS_TABLE, predicate)
    lake.replace_where(out.table_id_lifecycle, LIFECYCLE_TABLE, predicate)
    lake.replace_where(out.ddl_events, DDL_TABLE, predicate)
    lake.overwrite(out.schema_history, HISTORY_TABLE)
    quarantine = out.quarantine.transform(conform(QUARANTINE))
    lake.replace_where(quarantine, QUARANTINE_TABLE, f"stage = 'silver' AND ({predicate})")
    record_progress(lake, Layer.SILVER, out.files)


__all__ = [
    "MAPS_OUT",
    "QUERIES_OUT",
    "SilverOutput",
    "build_silver",
    "decode_queries",
    "decode_table_maps",
    "write_silver",
]
