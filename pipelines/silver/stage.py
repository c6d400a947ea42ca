"""The silver stage: table maps, table-id lifecycle, QUERY/DDL events and schema history.

``build_silver`` reads the bronze events of the files silver has still to (re)build
(``pending_files(lake, Layer.SILVER)``) and decodes, never the rows themselves:

* ``table_maps``: every TABLE_MAP with its in-force range (one ``applyInArrow`` group per file:
  the range needs the file's order) and the rows events read with it;
* ``table_id_lifecycle``: per file and table id, aggregated from the maps;
* ``ddl_events``: every QUERY-shaped event (``mapInArrow``), DDL with the objects it touches;
* ``schema_history``: rebuilt over all files from the seed snapshot (``silver.seed_path``), the
  DDL of every file replayed in order (files by path, then offset) and the shapes the table maps
  show; small, so it is replaced as a whole;
* ``resolved_column_names`` of maps written without names: the DDL/seed version in force at the
  map's position when its column count matches, so gold can name the columns.

Decoding failures go to the quarantine table with ``stage = 'silver'``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from conf.models import AppConfig
from pipelines.bronze.schema import BINLOG_EVENTS, QUARANTINE
from pipelines.progress import file_predicate, pending_files, record_progress
from pipelines.silver.ddl import ColumnSpec, DdlResult, SchemaRegistry, parse_seed
from pipelines.silver.decode import QUERY_EVENT_TYPES, ROWS_EVENT_TYPES, maps_of_file_arrow, query_rows
from pipelines.silver.schema import DDL_EVENTS, SCHEMA_HISTORY, TABLE_ID_LIFECYCLE, TABLE_MAPS
from pipelines.storage import Lakehouse, Layer, Table

EVENTS = Table.bronze("binlog_events")
QUARANTINE_TABLE = Table.bronze("quarantine")
TABLE_MAPS_TABLE = Table.silver("table_maps")
LIFECYCLE_TABLE = Table.silver("table_id_lifecycle")
DDL_TABLE = Table.silver("ddl_events")
HISTORY_TABLE = Table.silver("schema_history")

_ERRORS = [
    StructField("problem_code", StringType(), True),
    StructField("problem_message", StringType(), True),
    StructField("problem_path", StringType(), True),
    StructField("event_type_name", StringType(), True),
]
MAPS_OUT = StructType([f for f in TABLE_MAPS.fields] + _ERRORS)
QUERIES_OUT = StructType(
    [f for f in DDL_EVENTS.fields if f.name != "event_type_name"]
    + _ERRORS
    + [StructField("body", BINLOG_EVENTS["body"].dataType, True)]
)


@dataclass
class SilverOutput:
    """What one silver build produced (frames persisted) for ``files``."""

    files: list[str]
    table_maps: DataFrame
    table_id_lifecycle: DataFrame
    ddl_events: DataFrame
    schema_history: DataFrame
    quarantine: DataFrame


def _conform(df: DataFrame, schema: StructType) -> DataFrame:
    return df.select(*[F.col(f.name).cast(f.dataType) for f in schema.fields])


def _quarantine_of(df: DataFrame) -> DataFrame:
    return df.where(F.col("problem_code").isNotNull()).select(
        F.lit("silver").alias("stage"),
        "file",
        "file_name",
        "offset",
        "inner_index",
        "event_type_name",
        F.col("problem_code").alias("code"),
        F.lit("error").alias("severity"),
        F.col("problem_path").alias("path"),
        F.col("problem_message").alias("message"),
        "body",
    )


def decode_maps(events: DataFrame) -> DataFrame:
    """Bronze events -> decoded maps with in-force ranges (:data:`MAPS_OUT`), error rows included."""
    markers = events.where(
        (F.col("checksum_ok").isNull() | F.col("checksum_ok"))
        & F.col("event_type").isin([19, 15, *[int(t) for t in ROWS_EVENT_TYPES]])
    ).select(
        "file",
        "file_name",
        "offset",
        "inner_index",
        "event_type",
        "table_id",
        "statement_end",
        F.when(F.col("event_type") == 19, F.col("body")).alias("body"),
        F.when(F.col("event_type") == 19, F.col("format_description")).alias("format_description"),
    )
    arrow_schema = to_arrow_schema(MAPS_OUT)

    def per_file(table: pa.Table) -> pa.Table:
        return maps_of_file_arrow(table, arrow_schema)

    return markers.groupBy("file").applyInArrow(per_file, MAPS_OUT)


def decode_queries(events: DataFrame) -> DataFrame:
    """Bronze QUERY-shaped events -> :data:`QUERIES_OUT` rows (DDL replay not applied yet)."""
    queries = events.where(
        (F.col("checksum_ok").isNull() | F.col("checksum_ok"))
        & F.col("event_type").isin([int(t) for t in QUERY_EVENT_TYPES])
    )
    arrow_schema = to_arrow_schema(QUERIES_OUT)

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return query_rows(batches, arrow_schema)

    return queries.mapInArrow(per_partition, QUERIES_OUT)


def lifecycle(table_maps: DataFrame) -> DataFrame:
    """``table_maps -> table_id_lifecycle``: per file and table id, what it named and how often."""
    qualified = F.concat_ws(".", "schema_name", "table_name")
    grouped = table_maps.groupBy("file", "file_name", "table_id").agg(
        F.array_sort(F.collect_set(qualified)).alias("tables"),
        F.min("offset").alias("first_offset"),
        F.max(F.coalesce("in_force_until", "offset")).alias("last_offset"),
        F.count(F.lit(1)).alias("maps"),
        F.sum("rows_events").alias("rows_events"),
        F.array_sort(F.collect_set("fingerprint")).alias("fingerprints"),
    )
    return _conform(
        grouped.withColumn("reused_for_other_table", F.size("tables") > 1).withColumn(
            "reused_for_other_shape", F.size("fingerprints") > 1
        ),
        TABLE_ID_LIFECYCLE,
    )


def _position_key(file: str | None, offset: int | None, inner: int | None) -> tuple[str, int, int]:
    return (file or "", -1 if offset is None else offset, -1 if inner is None else inner)


def _spec_row(position: int, spec: ColumnSpec) -> dict[str, Any]:
    return {
        "position": position,
        "name": spec.name,
        "type": spec.type,
        "nullable": spec.nullable,
        "charset": spec.charset,
        "collation": spec.collation,
    }


def replay_history(
    seed: SchemaRegistry | None,
    ddl: list[dict[str, Any]],
    map_shapes: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[tuple[str, int, int], DdlResult]]:
    """Schema-history rows and each DDL event's replay result, from the three sources in order.

    ``ddl``: DDL events (file, offset, inner_index, default_schema, statement); ``map_shapes``:
    the first map of each (schema, table, fingerprint) with names (file, offset, inner_index,
    schema_name, table_name, fingerprint, columns).  A version is added when a source shows a
    column list (names and types) different from the table's current one, or a drop.
    """
    registry = SchemaRegistry()
    history: list[dict[str, Any]] = []
    current: dict[tuple[str, str], tuple[Any, ...] | None] = {}
    versions: dict[tuple[str, str], int] = {}

    def add(schema: str, table: str, columns: list[dict[str, Any]] | None, source: str, at: dict[str, Any]) -> None:
        key = (schema.lower(), table.lower())
        shape = None if columns is None else tuple((c["name"], c["type"]) for c in columns)
        if key in current and current[key] == shape:
            return
        current[key] = shape
        versions[key] = versions.get(key, 0) + 1
        history.append(
            {
                "schema_name": schema,
                "table_name": table,
                "version": versions[key],
                "valid_from_file": at.get("file"),
                "valid_from_offset": at.get("offset"),
                "valid_from_inner_index": at.get("inner_index"),
                "columns": columns,
                "source": source,
                "statement": at.get("statement"),
                "fingerprint": at.get("fingerprint"),
            }
        )

    if seed is not None:
        for (schema, table), specs in sorted(seed.tables.items()):
            registry.tables[(schema, table)] = list(specs)
            add(schema, table, [_spec_row(i + 1, s) for i, s in enumerate(specs)], "seed", {})
    timeline = [("ddl", row) for row in ddl] + [("table_map", row) for row in map_shapes]
    timeline.sort(key=lambda item: _position_key(item[1]["file"], item[1]["offset"], item[1]["inner_index"]))
    results: dict[tuple[str, int, int], DdlResult] = {}
    for source, row in timeline:
        if source == "ddl":
            result = registry.apply(row["statement"], row["default_schema"])
            results[_position_key(row["file"], row["offset"], row["inner_index"])] = result
            for schema, table in result.dropped:
                add(schema, table, None, "ddl", row)
            for schema, table in result.changed:
                specs = registry.columns(schema, table) or []
                add(schema, table, [_spec_row(i + 1, s) for i, s in enumerate(specs)], "ddl", row)
        else:
            columns = [
                {
                    "position": c["position"],
                    "name": c["name"],
                    "type": c["type"],
                    "nullable": c["nullable"],
                    "charset": None,
                    "collation": None,
                }
                for c in row["columns"]
            ]
            add(row["schema_name"], row["table_name"], columns, "table_map", row)
    return history, results


def _map_shapes(table_maps: DataFrame) -> list[dict[str, Any]]:
    first = F.min(F.struct("file", "offset", F.coalesce("inner_index", F.lit(-1)).alias("inner_key")))
    shapes = (
        table_maps.where(F.col("column_names").isNotNull())
        .groupBy("schema_name", "table_name", "fingerprint")
        .agg(first.alias("at"), F.first("columns").alias("columns"))
        .collect()
    )
    return [
        {
            "file": r.at.file,
            "offset": r.at.offset,
            "inner_index": None if r.at.inner_key < 0 else r.at.inner_key,
            "schema_name": r.schema_name,
            "table_name": r.table_name,
            "fingerprint": r.fingerprint,
            "columns": [c.asDict() for c in r.columns],
        }
        for r in shapes
    ]


def resolve_names(table_maps: DataFrame, history: DataFrame) -> DataFrame:
    """Fill ``resolved_column_names``/``names_source``: the map's names, else the DDL or seed
    version of its table in force at its position (when the column counts agree)."""
    versions = history.where(F.col("source") != "table_map").select(
        F.lower("schema_name").alias("k_schema"),
        F.lower("table_name").alias("k_table"),
        F.coalesce("valid_from_file", F.lit("")).alias("p_file"),
        F.coalesce("valid_from_offset", F.lit(-1).cast("long")).alias("p_offset"),
        F.coalesce("valid_from_inner_index", F.lit(-1)).alias("p_inner"),
        F.lit(0).alias("is_map"),
        F.transform("columns", lambda c: c["name"]).alias("v_names"),
        F.col("source").alias("v_source"),
    )
    maps = table_maps.select(
        F.lower("schema_name").alias("k_schema"),
        F.lower("table_name").alias("k_table"),
        F.col("file").alias("p_file"),
        F.col("offset").alias("p_offset"),
        F.coalesce("inner_index", F.lit(-1)).alias("p_inner"),
        F.lit(1).alias("is_map"),
        F.lit(None).cast("array<string>").alias("v_names"),
        F.lit(None).cast("string").alias("v_source"),
    )
    order = Window.partitionBy("k_schema", "k_table").orderBy("p_file", "p_offset", "p_inner", "is_map")
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # a drop version has null names: take the latest version row itself, nulls included
    marker = F.when(F.col("is_map") == 0, F.struct("v_names", "v_source"))
    placed = (
        versions.unionByName(maps)
        .withColumn("version_in_force", F.last(marker, ignorenulls=True).over(upto))
        .where("is_map = 1")
        .select(
            F.col("p_file").alias("file"),
            F.col("p_offset").alias("offset"),
            F.col("p_inner").alias("inner_key"),
            F.col("version_in_force.v_names").alias("h_names"),
            F.col("version_in_force.v_source").alias("h_source"),
        )
    )
    joined = table_maps.withColumn("inner_key", F.coalesce("inner_index", F.lit(-1))).join(
        placed, ["file", "offset", "inner_key"], "left"
    )
    usable = F.col("h_names").isNotNull() & (F.size("h_names") == F.col("column_count"))
    return _conform(
        joined.withColumn(
            "resolved_column_names",
            F.when(F.col("column_names").isNotNull(), F.col("column_names")).when(usable, F.col("h_names")),
        ).withColumn(
            "names_source",
            F.when(F.col("column_names").isNotNull(), F.lit("table_map")).when(usable, F.col("h_source")),
        ),
        TABLE_MAPS,
    )


def _load_seed(cfg: AppConfig) -> SchemaRegistry | None:
    path = cfg.silver.seed_path
    if path is None:
        return None
    return parse_seed(Path(path.removeprefix("file:")).read_text(encoding="utf-8"))


def _attach_replay(
    spark: SparkSession, queries: DataFrame, results: dict[tuple[str, int, int], DdlResult]
) -> DataFrame:
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
    joined = queries.withColumn("inner_key", F.coalesce("inner_index", F.lit(-1))).join(
        F.broadcast(replayed), ["file", "offset", "inner_key"], "left"
    )
    return _conform(
        joined.withColumn("objects", F.col("r_objects"))
        .withColumn("ddl_parsed", F.col("r_parsed"))
        .withColumn("ddl_error", F.col("r_error")),
        DDL_EVENTS,
    )


def build_silver(spark: SparkSession, cfg: AppConfig, lake: Lakehouse) -> SilverOutput:
    """Decode the metadata of every file pending for silver (see the module doc)."""
    files = pending_files(lake, Layer.SILVER)
    predicate = file_predicate(files)
    events = lake.read_or_empty(EVENTS, BINLOG_EVENTS).where(predicate)
    maps_out = decode_maps(events).persist()
    queries_out = decode_queries(events).persist()
    new_maps = _conform(maps_out.where(F.col("problem_code").isNull()), TABLE_MAPS)
    new_queries = queries_out.where(F.col("problem_code").isNull())
    # DDL of every file (other files' from silver, pending ones' from this build), in file order
    old_ddl = lake.read_or_empty(DDL_TABLE, DDL_EVENTS).where(f"NOT ({predicate})")
    ddl = _ddl_rows(old_ddl, new_queries)
    old_maps = lake.read_or_empty(TABLE_MAPS_TABLE, TABLE_MAPS).where(f"NOT ({predicate})")
    all_maps = old_maps.unionByName(new_maps)
    history_rows, results = replay_history(_load_seed(cfg), ddl, _map_shapes(all_maps))
    history = spark.createDataFrame(history_rows, SCHEMA_HISTORY).persist()
    table_maps = resolve_names(new_maps, history).persist()
    ddl_events = _attach_replay(spark, new_queries, results).persist()
    quarantine = _quarantine_of(maps_out).unionByName(_quarantine_of(queries_out)).persist()
    return SilverOutput(files, table_maps, lifecycle(table_maps).persist(), ddl_events, history, quarantine)


def _ddl_rows(old_ddl: DataFrame, new_queries: DataFrame) -> list[dict[str, Any]]:
    cols = ["file", "offset", "inner_index", "default_schema", "statement"]
    both = (
        old_ddl.where(F.col("kind") == "DDL")
        .select(*cols)
        .unionByName(new_queries.where(F.col("kind") == "DDL").select(*cols))
    )
    return [r.asDict() for r in both.where(F.col("statement").isNotNull()).collect()]


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
    lake.replace_where(_conform(out.quarantine, QUARANTINE), QUARANTINE_TABLE, f"stage = 'silver' AND ({predicate})")
    record_progress(lake, Layer.SILVER, out.files)


__all__ = [
    "SilverOutput",
    "build_silver",
    "decode_maps",
    "lifecycle",
    "replay_history",
    "resolve_names",
    "write_silver",
]
