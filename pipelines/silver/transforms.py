"""Silver transforms: pure ``DataFrame -> DataFrame`` functions (no reads, writes or collects).

Positions inside a file sort by ``(offset, inner_key)`` where ``inner_key`` is the inner index,
-1 for events outside a compressed transaction payload (the outer event comes first).

In force (exactly :class:`binlog_core.decoder.BinlogDecoder`'s rule, per file; table ids never
cross files): a TABLE_MAP that decoded is in force for its table id from its own position until,
whichever comes first,

* the next rows event flagged STMT_END (of any table id; that event still reads with it),
* the next TABLE_MAP that decoded with the same table id (it replaces the mapping),
* the next FORMAT_DESCRIPTION,

or the end of the file.  A rows event reads with the latest map of its id before it that has
not ended before it; rows events whose checksum failed are skipped, as the decoder skips them.

For gold: :func:`resolve_columns` attaches to every table map the columns valid at its position
(``resolved_columns``: ``position, name, type, nullable, charset, collation``;
``resolved_column_names``; ``names_source``): the map's own names when the file carries them,
else the ``schema_history`` version in force at the map (``ddl``, ``seed`` or an earlier
``table_map`` version) when its column count matches the map's; null otherwise.  Gold reads
``resolved_column_names`` from silver ``table_maps``.  The same answer for one position, in
plain Python over collected history rows: :func:`pipelines.silver.history.names_at`.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from binlog_core.constants import EventType
from pipelines.silver.decode import ROWS_EVENT_TYPES
from pipelines.silver.schema import HISTORY_COLUMN, TABLE_ID_LIFECYCLE

ROWS_TYPES = [int(t) for t in ROWS_EVENT_TYPES]
FORMAT_DESCRIPTION = int(EventType.FORMAT_DESCRIPTION)
TABLE_MAP = int(EventType.TABLE_MAP)


def _loose(data_type: DataType) -> DataType:
    """The type with every nested field, element and value nullable (casts may not tighten those)."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _loose(f.dataType), True) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_loose(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(_loose(data_type.keyType), _loose(data_type.valueType), True)
    return data_type


def conform(schema: StructType) -> Callable[[DataFrame], DataFrame]:
    """Select the columns of ``schema`` in its order, cast to its types where they differ (nested
    nullability is not tightened: Spark cannot cast a nullable element to a non-nullable one)."""

    def transform(df: DataFrame) -> DataFrame:
        have = {f.name: f.dataType for f in df.schema.fields}
        return df.select(
            *[
                F.col(f.name)
                if f.name in have and _loose(have[f.name]) == _loose(f.dataType)
                else F.col(f.name).cast(_loose(f.dataType)).alias(f.name)
                for f in schema.fields
            ]
        )

    return transform


def inner_key(column: str = "inner_index") -> Column:
    """The inner index, -1 outside a compressed transaction payload (sorts the outer event first)."""
    return F.coalesce(F.col(column), F.lit(-1))


def trusted(events: DataFrame) -> DataFrame:
    """Events whose checksum did not fail (the decoder reads nothing from the others)."""
    return events.where(F.col("checksum_ok").isNull() | F.col("checksum_ok"))


def _marks(events: DataFrame, maps: DataFrame) -> DataFrame:
    """Maps, rows events and FORMAT_DESCRIPTIONs of the files, one row each, with ``resets``."""
    good = trusted(events)
    rows = good.where(F.col("event_type").isin(ROWS_TYPES)).select(
        "file",
        "offset",
        inner_key().alias("inner_key"),
        "table_id",
        F.lit("rows").alias("kind"),
        F.when(F.coalesce("statement_end", F.lit(False)), F.lit("statement_end")).alias("resets"),
    )
    descriptions = good.where(F.col("event_type") == FORMAT_DESCRIPTION).select(
        "file",
        "offset",
        inner_key().alias("inner_key"),
        F.lit(None).cast("long").alias("table_id"),
        F.lit("format_description").alias("kind"),
        F.lit("format_description").alias("resets"),
    )
    mapped = maps.select(
        "file",
        "offset",
        inner_key().alias("inner_key"),
        "table_id",
        F.lit("map").alias("kind"),
        F.lit(None).cast("string").alias("resets"),
    )
    return rows.unionByName(descriptions).unionByName(mapped)


def with_in_force(events: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """``maps -> maps`` with ``in_force_until``, ``in_force_until_inner_index``, ``ended_by`` and
    ``rows_events`` (rows events read with the map), by the rule in the module doc.

    ``events``: bronze ``binlog_events`` columns ``file, offset, inner_index, event_type,
    table_id, statement_end, checksum_ok`` of the same files; ``maps``: decoded table maps with
    ``file, offset, inner_index, table_id`` (the id as the map decoded it).
    """

    def transform(maps: DataFrame) -> DataFrame:
        marks = _marks(events, maps)
        # "after this mark" is "before it" in reverse order: a frame that only grows is one pass
        # over a file's marks, where a frame running to the partition's end is rescanned per row
        forward = [F.col("offset").asc(), F.col("inner_key").asc()]
        backward = [F.col("offset").desc(), F.col("inner_key").desc()]
        earlier = (Window.unboundedPreceding, Window.currentRow - 1)
        file_after = Window.partitionBy("file").orderBy(*backward).rowsBetween(*earlier)
        file_before = Window.partitionBy("file").orderBy(*forward).rowsBetween(*earlier)
        id_after = Window.partitionBy("file", "table_id").orderBy(*backward).rowsBetween(*earlier)
        id_before = Window.partitionBy("file", "table_id").orderBy(*forward).rowsBetween(*earlier)
        here = F.struct("offset", "inner_key")
        is_map = F.col("kind") == "map"
        placed = marks.select(
            "file",
            "offset",
            "inner_key",
            "kind",
            F.min(F.when(F.col("resets").isNotNull(), F.struct("offset", "inner_key", F.col("resets").alias("why"))))
            .over(file_after)
            .alias("next_reset"),
            F.min(F.when(is_map, F.struct("offset", "inner_key", F.lit("replaced").alias("why"))))
            .over(id_after)
            .alias("next_map"),
            F.max(F.when(F.col("resets").isNotNull(), here)).over(file_before).alias("last_reset"),
            F.max(F.when(is_map, here)).over(id_before).alias("last_map"),
        )
        ends = placed.where(is_map).select(
            "file", "offset", "inner_key", F.least("next_reset", "next_map").alias("end")
        )
        in_force = F.col("last_map").isNotNull() & (
            F.col("last_reset").isNull() | (F.col("last_map") > F.col("last_reset"))
        )
        counts = (
            placed.where((F.col("kind") == "rows") & in_force)
            .groupBy(
                "file",
                F.col("last_map.offset").alias("offset"),
                F.col("last_map.inner_key").alias("inner_key"),
            )
            .agg(F.count(F.lit(1)).alias("n_rows_events"))
        )
        keyed = maps.drop("in_force_until", "in_force_until_inner_index", "ended_by", "rows_events")
        return (
            keyed.withColumn("inner_key", inner_key())
            .join(ends, ["file", "offset", "inner_key"], "left")
            .join(counts, ["file", "offset", "inner_key"], "left")
            .withColumn("in_force_from", F.col("offset"))
            .withColumn("in_force_until", F.col("end.offset"))
            .withColumn("in_force_until_inner_index", F.when(F.col("end.inner_key") >= 0, F.col("end.inner_key")))
            .withColumn("ended_by", F.col("end.why"))
            .withColumn("rows_events", F.coalesce("n_rows_events", F.lit(0)).cast("long"))
            .drop("inner_key", "end", "n_rows_events")
        )

    return transform


def lifecycle(table_maps: DataFrame) -> DataFrame:
    """``table_maps -> table_id_lifecycle``: per file and table id, the tables it named, its first
    and last offset (where its last mapping ends), maps, rows events read with them, the
    fingerprints seen, and whether the id was reused for another table or another shape.

    ``rows`` stays null: counting rows needs the row images decoded, which gold does.
    """
    qualified = F.concat_ws(".", "schema_name", "table_name")
    grouped = table_maps.groupBy("file", "file_name", "table_id").agg(
        F.array_sort(F.collect_set(qualified)).alias("tables"),
        F.min("offset").alias("first_offset"),
        F.max(F.coalesce("in_force_until", "offset")).alias("last_offset"),
        F.count(F.lit(1)).alias("maps"),
        F.sum("rows_events").alias("rows_events"),
        F.array_sort(F.collect_set("fingerprint")).alias("fingerprints"),
    )
    return grouped.select(
        "*",
        F.lit(None).cast("long").alias("rows"),
        (F.size("tables") > 1).alias("reused_for_other_table"),
        (F.size("fingerprints") > 1).alias("reused_for_other_shape"),
    ).transform(conform(TABLE_ID_LIFECYCLE))


def _map_history_columns() -> Column:
    """A map's ``columns`` as schema-history columns (type: the MySQL type text the map tells)."""
    return F.transform(
        "columns",
        lambda c: F.struct(
            c["position"].alias("position"),
            c["name"].alias("name"),
            c["mysql_type"].alias("type"),
            c["nullable"].alias("nullable"),
            c["charset"].alias("charset"),
            c["collation"].alias("collation"),
        ),
    ).cast(f"array<{HISTORY_COLUMN.simpleString()}>")


def shape_changes(table_maps: DataFrame) -> DataFrame:
    """The maps with names where a table's shape may change: the first map of each run of equal
    fingerprints per table, over all files in order (``file, offset, inner_index, schema_name,
    table_name, fingerprint, columns`` with schema-history columns)."""
    named = table_maps.where(F.col("column_names").isNotNull()).select(
        "file",
        "offset",
        "inner_index",
        "schema_name",
        "table_name",
        "fingerprint",
        _map_history_columns().alias("columns"),
        F.lower("schema_name").alias("k_schema"),
        F.lower("table_name").alias("k_table"),
    )
    order = Window.partitionBy("k_schema", "k_table").orderBy("file", "offset", inner_key())
    return (
        named.withColumn("previous", F.lag("fingerprint").over(order))
        .where(F.col("previous").isNull() | (F.col("previous") != F.col("fingerprint")))
        .drop("previous", "k_schema", "k_table")
    )


def resolve_columns(history: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """``table_maps -> table_maps`` with ``resolved_columns``, ``resolved_column_names`` and
    ``names_source`` (see the module doc): the map's own names, else the ``history`` version in
    force at the map when its column count matches."""

    def transform(table_maps: DataFrame) -> DataFrame:
        versions = history.select(
            F.lower("schema_name").alias("k_schema"),
            F.lower("table_name").alias("k_table"),
            F.coalesce("valid_from_file", F.lit("")).alias("p_file"),
            F.coalesce("valid_from_offset", F.lit(-1).cast("long")).alias("p_offset"),
            inner_key("valid_from_inner_index").alias("p_inner"),
            F.col("version").alias("p_version"),
            F.lit(0).alias("is_map"),
            F.struct(F.col("columns").alias("v_columns"), F.col("source").alias("v_source")).alias("version_row"),
        )
        maps = table_maps.select(
            F.lower("schema_name").alias("k_schema"),
            F.lower("table_name").alias("k_table"),
            F.col("file").alias("p_file"),
            F.col("offset").alias("p_offset"),
            inner_key().alias("p_inner"),
            F.lit(0).alias("p_version"),
            F.lit(1).alias("is_map"),
            F.lit(None).cast(versions.schema["version_row"].dataType).alias("version_row"),
        )
        positions = ["p_file", "p_offset", "p_inner", "is_map", "p_version"]
        order = Window.partitionBy("k_schema", "k_table").orderBy(*positions)
        upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        placed = (
            versions.unionByName(maps)
            .withColumn("in_force", F.last("version_row", ignorenulls=True).over(upto))
            .where("is_map = 1")
            .select(
                F.col("p_file").alias("file"),
                F.col("p_offset").alias("offset"),
                F.col("p_inner").alias("inner_key"),
                F.col("in_force.v_columns").alias("h_columns"),
                F.col("in_force.v_source").alias("h_source"),
            )
        )
        own = F.col("column_names").isNotNull()
        usable = F.col("h_columns").isNotNull() & (F.size("h_columns") == F.col("column_count"))
        resolved = F.when(own, _map_history_columns()).when(usable, F.col("h_columns"))
        return (
            table_maps.withColumn("inner_key", inner_key())
            .join(placed, ["file", "offset", "inner_key"], "left")
            .withColumn("resolved_columns", resolved)
            .withColumn("resolved_column_names", F.transform("resolved_columns", lambda c: c["name"]))
            .withColumn("names_source", F.when(own, F.lit("table_map")).when(usable, F.col("h_source")))
            .drop("inner_key", "h_columns", "h_source")
        )

    return transform


def quarantine_of(decoded: DataFrame) -> DataFrame:
    """Quarantine rows (``stage = 'silver'``) of decoder output rows with a ``problem_code``
    (errors: the event did not decode; warnings: it did, something in it is unusual)."""
    return decoded.where(F.col("problem_code").isNotNull()).select(
        F.lit("silver").alias("stage"),
        "file",
        "file_name",
        "offset",
        "inner_index",
        "event_type_name",
        F.col("problem_code").alias("code"),
        F.coalesce(F.col("problem_severity"), F.lit("error")).alias("severity"),
        F.col("problem_path").alias("path"),
        F.col("problem_message").alias("message"),
        "body",
    )


__all__ = [
    "conform",
    "inner_key",
    "lifecycle",
    "quarantine_of",
    "resolve_columns",
    "shape_changes",
    "trusted",
    "with_in_force",
]
