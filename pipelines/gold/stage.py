"""The gold stage: rows events decoded with their table maps into the change tables.

``build_gold`` reads the bronze events of the files gold has still to (re)build
(``pending_files(lake, Layer.GOLD)``) and silver's table maps of those files, joins each rows
event with the TABLE_MAP in force for it, decodes every rows event independently in Spark's
Python workers (``mapInArrow`` over whatever partitions the events are in), and returns:

* ``changes``: the unified change table (:data:`pipelines.gold.schema.CHANGES`);
* ``tables``: one typed change table per source table, ``<schema>__<table>``
  (:func:`pipelines.gold.transforms.typed_changes`);
* ``quarantine``: what could not be decoded (``stage = 'gold'``), e.g. ``UNKNOWN_TABLE_ID``
  for a rows event without a table map in force -- never guessed.

``write_gold`` replaces every row of those files in each table (so re-runs write the same rows),
clears them from gold tables the new build no longer fills (a file rewritten in place), fills
the ``rows`` of silver's ``table_id_lifecycle`` (row changes decoded per file and table id:
only decoding counts them), and records progress last.  A file silver has still to build waits.
Gold runs with the session time zone UTC: DATETIME values are wall
clock times stored unchanged as UTC timestamps, TIMESTAMP values are UTC instants.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from binlog_core.charsets import CHARSET_CODECS
from binlog_core.columns import DecodeOptions
from conf.models import AppConfig
from pipelines.bronze.schema import QUARANTINE
from pipelines.gold.schema import DECODED
from pipelines.gold.transforms import (
    changes_of,
    decode_rows_events,
    gold_table_name,
    problems_of,
    rows_input,
    table_layout,
    transaction_boundaries,
    typed_changes,
    with_commit_timestamps,
    with_row_counts,
)
from pipelines.progress import file_predicate, pending_files, record_progress
from pipelines.silver.schema import DDL_EVENTS, HISTORY_COLUMN
from pipelines.storage import Lakehouse, Layer, Persisted, Table

EVENTS = Table.bronze("binlog_events")
QUARANTINE_TABLE = Table.bronze("quarantine")
TABLE_MAPS = Table.silver("table_maps")
DDL_EVENTS_TABLE = Table.silver("ddl_events")
LIFECYCLE_TABLE = Table.silver("table_id_lifecycle")
CHANGES_TABLE = Table.gold("changes")

TABLE_MAP_COLUMNS = StructType(
    [
        StructField("file", StringType(), False),
        StructField("file_name", StringType(), False),
        StructField("offset", LongType(), False),
        StructField("inner_index", IntegerType(), True),
        StructField("table_id", LongType(), False),
        StructField("schema_name", StringType(), False),
        StructField("table_name", StringType(), False),
        StructField("column_names", ArrayType(StringType(), True), True),
        StructField("resolved_columns", ArrayType(HISTORY_COLUMN, False), True),
        StructField("body", BinaryType(), False),
        StructField("format_description", StringType(), False),
    ]
)
"""The columns of silver ``table_maps`` gold reads."""


@dataclass
class GoldOutput:
    """What one gold build produced (frames persisted) for ``files``."""

    files: list[str]
    changes: DataFrame
    tables: dict[str, DataFrame]
    quarantine: DataFrame
    stale_tables: list[str] = field(default_factory=list)
    """Existing gold tables this build does not fill that hold rows of ``files`` (a file rewritten
    in place that no longer changes their source table): ``write_gold`` removes those rows."""
    kept: Persisted = field(default_factory=Persisted)

    def unpersist(self) -> None:
        """Release the persisted frames (once written; the frames are recomputed if used again)."""
        self.kept.release()


def decode_options(cfg: AppConfig) -> DecodeOptions:
    """The decoder options of the configuration (default charset as a Python codec)."""
    codec = CHARSET_CODECS.get(cfg.decoder.default_charset, cfg.decoder.default_charset)
    return DecodeOptions(default_charset=codec)


def build_gold(spark: SparkSession, cfg: AppConfig, lake: Lakehouse) -> GoldOutput:
    """Decode the rows events of every file pending for gold (see the module doc)."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    # a file silver has still to (re)build waits: its maps and DDL are not there yet
    unready = set(pending_files(lake, Layer.SILVER))
    files = [f for f in pending_files(lake, Layer.GOLD) if f not in unready]
    predicate = file_predicate(files)
    events = lake.read(EVENTS).where(predicate) if lake.exists(EVENTS) else None
    if events is None or not files:
        empty_changes = changes_of(spark.createDataFrame([], DECODED))
        return GoldOutput(files, empty_changes, {}, spark.createDataFrame([], QUARANTINE))
    table_maps = lake.read_or_empty(TABLE_MAPS, TABLE_MAP_COLUMNS).where(predicate)
    kept = Persisted()
    queries = lake.read_or_empty(DDL_EVENTS_TABLE, DDL_EVENTS).where(predicate)
    decoded = kept.keep(rows_input(events, table_maps).transform(decode_rows_events(decode_options(cfg))))
    boundaries = transaction_boundaries(events, queries)
    changes = kept.keep(changes_of(decoded).transform(with_commit_timestamps(boundaries)))
    quarantine = kept.keep(problems_of(decoded))
    tables = typed_tables(lake, changes)
    stale = stale_tables(lake, predicate, set(tables))
    return GoldOutput(files, changes, tables, quarantine, stale, kept)


def stale_tables(lake: Lakehouse, predicate: str, filled: set[str]) -> list[str]:
    """Gold tables holding rows of the files in ``predicate`` (as ``changes`` stores them now) that
    the new build does not fill: their rows of those files must go."""
    if not lake.exists(CHANGES_TABLE):
        return []
    before = lake.read(CHANGES_TABLE).where(predicate).select("schema_name", "table_name").distinct().collect()
    names = {gold_table_name(row.schema_name, row.table_name) for row in before}
    return sorted(name for name in names - filled if lake.exists(Table.gold(name)))


def typed_tables(lake: Lakehouse, changes: DataFrame) -> dict[str, DataFrame]:
    """One typed change frame per source table in ``changes`` (``<schema>__<table>`` -> frame)."""
    first_seen = (
        changes.groupBy("schema_name", "table_name", "column_names", "column_kinds")
        .agg(F.min(F.struct("file", "offset", F.coalesce("inner_index", F.lit(-1)), "row_index")).alias("first"))
        .orderBy("first")
        .collect()
    )
    versions: dict[str, list[tuple[list[str], list[str]]]] = {}
    sources: dict[str, set[tuple[str, str]]] = {}
    for row in first_seen:
        name = gold_table_name(row.schema_name, row.table_name)
        versions.setdefault(name, []).append((list(row.column_names), list(row.column_kinds)))
        sources.setdefault(name, set()).add((row.schema_name, row.table_name))
    tables: dict[str, DataFrame] = {}
    for name, table_versions in versions.items():
        table = Table.gold(name)
        existing = None
        if lake.exists(table):
            after = lake.read(table).schema["after"].dataType
            existing = after if isinstance(after, StructType) else None
        layout = table_layout(table_versions, existing)
        wanted = F.lit(False)
        for schema_name, table_name in sorted(sources[name]):
            wanted = wanted | ((F.col("schema_name") == schema_name) & (F.col("table_name") == table_name))
        tables[name] = changes.where(wanted).transform(typed_changes(layout))
    return tables


def write_gold(lake: Lakehouse, out: GoldOutput) -> None:
    """Replace the rows of ``out.files`` in every gold table and the gold quarantine, then record progress."""
    if not out.files:
        return
    predicate = file_predicate(out.files)
    lake.replace_where(out.changes, CHANGES_TABLE, predicate, merge_schema=True)
    for name, frame in sorted(out.tables.items()):
        lake.replace_where(frame, Table.gold(name), predicate, merge_schema=True)
    for name in out.stale_tables:
        table = Table.gold(name)
        empty = lake.spark.createDataFrame([], lake.read(table).schema)
        lake.replace_where(empty, table, predicate)
    lake.replace_where(out.quarantine, QUARANTINE_TABLE, f"stage = 'gold' AND {predicate}")
    if lake.exists(LIFECYCLE_TABLE):
        lifecycle = lake.read(LIFECYCLE_TABLE).where(predicate)
        lake.replace_where(lifecycle.transform(with_row_counts(out.changes)), LIFECYCLE_TABLE, predicate)
    record_progress(lake, Layer.GOLD, out.files)


__all__ = ["GoldOutput", "build_gold", "decode_options", "stale_tables", "typed_tables", "write_gold"]
