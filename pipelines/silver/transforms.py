"""Silver transforms: pure ``DataFrame -> DataFrame`` functions (no reads, writes or collects).

Nothing here sorts a file's events: which events a TABLE_MAP was in force for, and where its
force ended, bronze recorded while it walked the file (``binlog_core.sequence``).

For gold: :func:`resolve_columns` attaches to every table map the columns valid at its position
(``resolved_columns``: ``position, name, type, nullable, charset, collation, default,
primary_key``; ``resolved_column_names``; ``names_source``; ``history_version``): the map's own
names when the file carries them, else the ``schema_history`` version of the map's server in
force at the map (``ddl``, ``seed`` or an earlier ``table_map`` version) when its column count
matches the map's; null otherwise.  It is an equi-join on the table with a range condition on
the position, against a history small enough to broadcast.  The same answer for one position, in
plain Python over collected history rows: :func:`pipelines.silver.history.names_at`.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.tables import HISTORY_COLUMN, TABLE_ID_LIFECYCLE, conform


def inner_key(column: str = "inner_index") -> Column:
    """The inner index, -1 outside a compressed transaction payload (sorts the outer event first)."""
    return F.coalesce(F.col(column), F.lit(-1))


def trusted(events: DataFrame) -> DataFrame:
    """Events whose checksum did not fail (the decoder reads nothing from the others)."""
    return events.where(F.col("checksum_ok").isNull() | F.col("checksum_ok"))


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
        F.first("run_id").alias("run_id"),
    )
    return grouped.select(
        "*",
        F.lit(None).cast("long").alias("rows"),
        (F.size("tables") > 1).alias("reused_for_other_table"),
        (F.size("fingerprints") > 1).alias("reused_for_other_shape"),
    ).transform(conform(TABLE_ID_LIFECYCLE))


def map_history_columns() -> Column:
    """A map's ``columns`` as schema-history columns (type: the MySQL type text the map tells;
    primary key: whether the map names the column in its key)."""
    return F.transform(
        "columns",
        lambda c: F.struct(
            c["position"].alias("position"),
            c["name"].alias("name"),
            c["mysql_type"].alias("type"),
            c["nullable"].alias("nullable"),
            c["charset"].alias("charset"),
            c["collation"].alias("collation"),
            F.lit(None).cast("string").alias("default"),
            # a map with names (FULL metadata) tells the key, or that there is none
            F.when(
                F.col("column_names").isNotNull() | (F.size("primary_key") > 0),
                F.array_contains("primary_key", c["position"]),
            ).alias("primary_key"),
        ),
    ).cast(f"array<{HISTORY_COLUMN.simpleString()}>")


def _position(sequence: str, file: str, offset: str, inner: str) -> Column:
    """A position of one server's binlog as a struct that compares like the binlog's order."""
    return F.struct(
        F.coalesce(F.col(sequence), F.lit(-1).cast("long")).alias("s"),
        F.coalesce(F.col(file), F.lit("")).alias("f"),
        F.coalesce(F.col(offset), F.lit(-1).cast("long")).alias("o"),
        F.coalesce(F.col(inner), F.lit(-1)).alias("i"),
    )


def _seed_start() -> Column:
    """Where a seed version starts: before every event."""
    return F.struct(
        F.lit(-2).cast("long").alias("s"), F.lit("").alias("f"), F.lit(-1).cast("long").alias("o"), F.lit(-1).alias("i")
    )


def resolve_columns(history: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """``table_maps -> table_maps`` with ``resolved_columns``, ``resolved_column_names``,
    ``names_source``, ``history_version`` and ``plan_key`` (see the module doc).

    ``table_maps`` has ``server``, ``sequence`` (its file's) and ``shape_key`` (from the decode);
    ``history``: ``schema_history`` rows of the maps' servers.

    Each map only looks up which version is in force at its position (a key); the columns are
    resolved once per distinct ``(shape_key, version)`` -- a binlog repeats a few shapes many
    times, and a shape fixes the map's columns, names and key -- and attached by that pair.
    """
    version_key = F.concat_ws("\u0000", "server", "schema_name", "table_name", F.col("version").cast("string"))
    versions = history.select(
        F.col("server").alias("h_server"),
        F.lower("schema_name").alias("h_schema"),
        F.lower("table_name").alias("h_table"),
        F.when(F.col("valid_from_file").isNull(), _seed_start())
        .otherwise(_position("valid_from_sequence", "valid_from_file", "valid_from_offset", "valid_from_inner_index"))
        .alias("h_from"),
        F.when(
            F.col("valid_to_file").isNotNull(),
            _position("valid_to_sequence", "valid_to_file", "valid_to_offset", "valid_to_inner_index"),
        ).alias("h_to"),
        version_key.alias("h_key"),
    )
    contents = history.select(
        version_key.alias("h_key"),
        F.col("columns").alias("h_columns"),
        F.col("source").alias("h_source"),
        F.col("version").alias("h_version"),
    )

    def transform(table_maps: DataFrame) -> DataFrame:
        here = _position("sequence", "file", "offset", "inner_index")
        placed = (
            table_maps.withColumn("_here", here)
            .join(
                F.broadcast(versions),
                (F.col("server") == F.col("h_server"))
                & (F.lower("schema_name") == F.col("h_schema"))
                & (F.lower("table_name") == F.col("h_table"))
                & (F.col("h_from") <= F.col("_here"))
                & (F.col("h_to").isNull() | (F.col("_here") < F.col("h_to"))),
                "left",
            )
            .withColumn("_version", F.coalesce("h_key", F.lit("")))
            .drop("_here", *versions.columns)
        )
        shapes = (
            placed.groupBy(F.col("shape_key").alias("_shape"), F.col("_version").alias("_in_force"))
            .agg(*(F.first(name).alias(name) for name in ("columns", "column_names", "primary_key", "column_count")))
            .join(F.broadcast(contents), F.col("_in_force") == F.col("h_key"), "left")
        )
        own = F.col("column_names").isNotNull()
        usable = F.col("h_columns").isNotNull() & (F.size("h_columns") == F.col("column_count"))
        plan = F.sha2(F.concat(F.col("_shape"), F.coalesce(F.to_json("resolved_columns"), F.lit(""))), 256)
        resolved = (
            shapes.withColumn("resolved_columns", F.when(own, map_history_columns()).when(usable, F.col("h_columns")))
            .withColumn("resolved_column_names", F.transform("resolved_columns", lambda c: c["name"]))
            .withColumn("names_source", F.when(own, F.lit("table_map")).when(usable, F.col("h_source")))
            .withColumn("history_version", F.when(~own & usable, F.col("h_version")))
            .withColumn("plan_key", F.substring(plan, 1, 32))
            .select("_shape", "_in_force", *RESOLVED)
        )
        return placed.join(
            F.broadcast(resolved),
            F.col("shape_key").eqNullSafe(F.col("_shape")) & (F.col("_version") == F.col("_in_force")),
            "left",
        ).drop("_version", "_shape", "_in_force")

    return transform


RESOLVED = ("resolved_columns", "resolved_column_names", "names_source", "history_version", "plan_key")
"""The ``table_maps`` columns :func:`resolve_columns` adds."""


def quarantine_of(decoded: DataFrame, run_id: str) -> DataFrame:
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
        F.lit(run_id).alias("run_id"),
    )


__all__ = [
    "RESOLVED",
    "inner_key",
    "lifecycle",
    "map_history_columns",
    "quarantine_of",
    "resolve_columns",
    "trusted",
]
