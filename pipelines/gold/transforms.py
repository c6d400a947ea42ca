"""Gold transforms: rows events joined with their table maps in force, decoded, and projected.

All functions here are pure ``DataFrame -> DataFrame`` transforms (or build one); the stage reads
and writes.

**Which table map is in force** for a rows event is exactly what
:class:`binlog_core.decoder.BinlogDecoder` keeps while it reads a file in order: the last
TABLE_MAP of the same table id before the event, unless a rows event flagged STMT_END or a
FORMAT_DESCRIPTION came between them (each clears every map).  Events whose checksum failed
change nothing.  :func:`maps_in_force` computes that with two window functions over the
events' coordinates only (no bodies), so it is the same answer however the events are
partitioned; the bodies are joined afterwards and decoded by ``mapInArrow`` over whatever
partitions the rows events are in.

**Typed change tables** (:func:`typed_changes`): one row per row change of one source table::

    file, file_name, offset, inner_index, row_index, event_type, gtid, commit_timestamp,
    event_timestamp, server_id, schema_name, table_name, table_id, op,
    before struct<col: typed, ...>, after struct<col: typed, ...>,
    absent_columns struct<before: array<string>, after: array<string>>

``before``/``after`` hold one typed field per column the table has ever had (types as in
:mod:`pipelines.gold.types`, plus ``<col>__raw`` companions), so analysts write
``after.price`` and ``SELECT after.*``; a NULL struct means the image does not exist (no
before image for an insert).  A column absent from a MINIMAL/NOBLOB image is NULL in the
struct and named in ``absent_columns``.  When DDL adds a column a new field appears; a dropped
column's field stays and is no longer filled.  When a column's type changes so that its Spark
type differs, rows with the new type fill a new field ``<col>__<type>`` (``price__decimal_12_2``)
and the old field keeps the old rows: history is never rewritten and no value is coerced.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, DecimalType, FloatType, LongType, StringType, StructField, StructType

from binlog_core.columns import DecodeOptions
from binlog_core.constants import EventType
from binlog_core.rows import ROWS_KINDS
from pipelines.bronze.schema import QUARANTINE
from pipelines.gold.decode import decode_partition
from pipelines.gold.schema import CHANGES, DECODED, ROWS_INPUT
from pipelines.gold.types import RAW_SUFFIX, conversion_of, raw_type, spark_type, type_suffix

ROWS_EVENT_TYPES = sorted(int(code) for code in ROWS_KINDS)
"""Type codes of every rows event."""

_POSITION = ["file", "offset", "inner_index"]


def _inner_key() -> Column:
    """Order of events inside a file: offset, then inner index with the outer event first."""
    return F.coalesce(F.col("inner_index"), F.lit(-1))


def _trusted(events: DataFrame) -> DataFrame:
    return events.where(F.col("checksum_ok").isNull() | F.col("checksum_ok"))


def maps_in_force(events: DataFrame, table_maps: DataFrame) -> DataFrame:
    """For each rows event of ``events``: the position of the TABLE_MAP in force, or nulls.

    ``events`` has bronze ``binlog_events`` columns, ``table_maps`` silver's (maps that decoded).
    Returns ``file, offset, inner_index, inner_key, map_offset, map_inner_key`` for every rows
    event whose checksum did not fail (``inner_key``: the inner index, -1 for events of the file).
    """
    trusted = _trusted(events)
    rows = trusted.where(F.col("event_type").isin(ROWS_EVENT_TYPES)).select(
        *_POSITION,
        "table_id",
        F.lit(False).alias("is_map"),
        F.coalesce(F.col("statement_end"), F.lit(False)).alias("resets"),
        F.lit(True).alias("is_rows"),
    )
    descriptions = trusted.where(F.col("event_type") == int(EventType.FORMAT_DESCRIPTION)).select(
        *_POSITION,
        F.lit(None).cast("long").alias("table_id"),
        F.lit(False).alias("is_map"),
        F.lit(True).alias("resets"),
        F.lit(False).alias("is_rows"),
    )
    map_events = trusted.where(F.col("event_type") == int(EventType.TABLE_MAP)).select(
        "file", "offset", _inner_key().alias("inner_key")
    )
    maps = (
        table_maps.select(*_POSITION, "table_id", _inner_key().alias("inner_key"))
        .join(map_events, ["file", "offset", "inner_key"], "left_semi")
        .select(
            *_POSITION,
            "table_id",
            F.lit(True).alias("is_map"),
            F.lit(False).alias("resets"),
            F.lit(False).alias("is_rows"),
        )
    )
    marks = rows.unionByName(descriptions).unionByName(maps).withColumn("inner_key", _inner_key())
    here = F.struct(F.col("offset"), F.col("inner_key"))
    before_this = Window.unboundedPreceding, -1
    by_file = Window.partitionBy("file").orderBy("offset", "inner_key").rowsBetween(*before_this)
    by_id = Window.partitionBy("file", "table_id").orderBy("offset", "inner_key").rowsBetween(*before_this)
    placed = marks.select(
        *_POSITION,
        "is_rows",
        F.max(F.when(F.col("resets"), here)).over(by_file).alias("last_reset"),
        F.max(F.when(F.col("is_map"), here)).over(by_id).alias("last_map"),
    ).where("is_rows")
    in_force = F.col("last_map").isNotNull() & (
        F.col("last_reset").isNull() | (F.col("last_map") > F.col("last_reset"))
    )
    return placed.select(
        *_POSITION,
        _inner_key().alias("inner_key"),
        F.when(in_force, F.col("last_map.offset")).alias("map_offset"),
        F.when(in_force, F.col("last_map.inner_key")).alias("map_inner_key"),
    )


def rows_input(events: DataFrame, table_maps: DataFrame) -> DataFrame:
    """Rows events with the body of their TABLE_MAP in force (:data:`ROWS_INPUT`), and silver's
    ``resolved_columns`` of that map (the schema history in force at it) when ``table_maps`` has
    them: what completes maps written without full metadata."""
    placed = maps_in_force(events, table_maps)
    history_type = ROWS_INPUT["history_columns"].dataType
    maps = table_maps.select(
        F.col("file").alias("m_file"),
        F.col("offset").alias("m_offset"),
        F.coalesce(F.col("inner_index"), F.lit(-1)).alias("m_inner_key"),
        F.col("body").alias("map_body"),
        F.col("format_description").alias("map_format_description"),
        (F.col("resolved_columns") if "resolved_columns" in table_maps.columns else F.lit(None))
        .cast(history_type)
        .alias("history_columns"),
    )
    joined = (
        _trusted(events)
        .where(F.col("event_type").isin(ROWS_EVENT_TYPES))
        .withColumn("inner_key", _inner_key())
        .join(placed.drop("inner_index"), ["file", "offset", "inner_key"])
        .join(
            maps,
            (F.col("file") == F.col("m_file"))
            & (F.col("map_offset") == F.col("m_offset"))
            & (F.col("map_inner_key") == F.col("m_inner_key")),
            "left",
        )
    )
    return joined.select(*[F.col(f.name).cast(f.dataType) for f in ROWS_INPUT.fields])


def decode_rows_events(options: DecodeOptions) -> Callable[[DataFrame], DataFrame]:
    """``rows_input -> DECODED``: every rows event decoded in the partition it is in."""

    def transform(df: DataFrame) -> DataFrame:
        return df.mapInArrow(decode_partition(options), DECODED)

    return transform


TRANSACTION_STARTS = sorted(
    int(t) for t in (EventType.GTID, EventType.ANONYMOUS_GTID, EventType.GTID_TAGGED, EventType.MARIADB_GTID)
)
"""Events that open a transaction (MariaDB's GTID event stands for its BEGIN)."""
TRANSACTION_ENDS = sorted(int(t) for t in (EventType.XID, EventType.XA_PREPARE))
"""Events that end one: the commit of a transactional engine, the prepare of an XA transaction."""
_ENDING_KINDS = ("COMMIT", "ROLLBACK", "XA")
"""QUERY kinds that end a transaction (``XA END``/``PREPARE``; ``XA START`` opens one)."""


def transaction_boundaries(events: DataFrame, queries: DataFrame) -> DataFrame:
    """Where transactions open and end in each file: ``file, offset, inner_key, ends, end_time``.

    ``events``: bronze events; ``queries``: silver ``ddl_events`` (``kind``, ``statement``,
    ``timestamp``) of the same files.  ``end_time`` is the header time of an ending event: when
    the server wrote the commit.
    """
    by_type = _trusted(events).where(F.col("event_type").isin(TRANSACTION_STARTS + TRANSACTION_ENDS))
    typed = by_type.select(
        "file",
        "offset",
        _inner_key().alias("inner_key"),
        F.col("event_type").isin(TRANSACTION_ENDS).alias("ends"),
        "timestamp",
    )
    opening = (F.col("kind") == "BEGIN") | (
        (F.col("kind") == "XA") & F.upper(F.ltrim("statement")).rlike("^XA\\s+(START|BEGIN)")
    )
    by_kind = queries.where(F.col("kind").isin("BEGIN", *_ENDING_KINDS)).select(
        "file", "offset", _inner_key().alias("inner_key"), (~opening).alias("ends"), "timestamp"
    )
    return typed.unionByName(by_kind).select(
        "file", "offset", "inner_key", "ends", F.when(F.col("ends"), F.col("timestamp")).alias("end_time")
    )


def with_commit_timestamps(boundaries: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """``changes -> changes`` with ``commit_timestamp``: the time of the event that ends each row
    change's transaction -- the first transaction boundary after its rows event, when that one
    ends a transaction; null when the file holds no end for it (a file cut mid-transaction)."""

    def transform(changes: DataFrame) -> DataFrame:
        rows_events = changes.select("file", "offset", _inner_key().alias("inner_key")).distinct()
        marks = rows_events.select(
            "file", "offset", "inner_key", F.lit(None).cast("boolean").alias("ends"), F.lit(None).cast("long")
        ).toDF("file", "offset", "inner_key", "ends", "end_time")
        # the events after each one, as a frame that only grows (the file read backwards): a frame
        # to the end of the file would be rescanned for every row
        after_this = (
            Window.partitionBy("file")
            .orderBy(F.col("offset").desc(), F.col("inner_key").desc())
            .rowsBetween(Window.unboundedPreceding, -1)
        )
        boundary = F.when(F.col("ends").isNotNull(), F.struct("ends", "end_time"))
        placed = (
            marks.unionByName(boundaries)
            .withColumn("next_boundary", F.last(boundary, ignorenulls=True).over(after_this))
            .where(F.col("ends").isNull())
            .select(
                "file",
                "offset",
                "inner_key",
                F.when(F.col("next_boundary.ends"), F.col("next_boundary.end_time")).alias("commit_time"),
            )
        )
        return (
            changes.withColumn("inner_key", _inner_key())
            .join(placed, ["file", "offset", "inner_key"], "left")
            .withColumn("commit_timestamp", F.timestamp_seconds(F.col("commit_time")))
            .select(*[F.col(f.name).cast(f.dataType) for f in CHANGES.fields])
        )

    return transform


def with_row_counts(changes: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """``table_id_lifecycle -> table_id_lifecycle`` with ``rows``: the row changes of ``changes``
    per file and table id (0 for an id whose rows events held none that decoded)."""

    def transform(lifecycle: DataFrame) -> DataFrame:
        counts = changes.groupBy("file", "table_id").agg(F.count(F.lit(1)).alias("counted"))
        return (
            lifecycle.join(counts, ["file", "table_id"], "left")
            .withColumn("rows", F.coalesce(F.col("counted"), F.lit(0)).cast("long"))
            .select(*lifecycle.columns)
        )

    return transform


def changes_of(decoded: DataFrame) -> DataFrame:
    """The ``changes`` rows of decoded output (:data:`CHANGES`); ``commit_timestamp`` stays null
    until :func:`with_commit_timestamps` places each change in its transaction."""
    rows = decoded.where(F.col("kind") == "change").select(
        "*",
        F.timestamp_seconds(F.col("timestamp")).alias("event_timestamp"),
        F.lit(None).cast("timestamp").alias("commit_timestamp"),
    )
    return rows.select(*[F.col(f.name).cast(f.dataType) for f in CHANGES.fields])


def problems_of(decoded: DataFrame) -> DataFrame:
    """Quarantine rows (bronze ``QUARANTINE`` columns, ``stage = 'gold'``) of decoded output."""
    rows = decoded.where(F.col("kind") == "problem").select(
        F.lit("gold").alias("stage"),
        "file",
        "file_name",
        "offset",
        "inner_index",
        F.col("event_type").alias("event_type_name"),
        "code",
        "severity",
        "path",
        "message",
        F.col("problem_body").alias("body"),
    )
    return rows.select(*[F.col(f.name).cast(f.dataType) for f in QUARANTINE.fields])


_PLAIN_NAME = re.compile(r"[a-z0-9]+(?:_[a-z0-9]+)*")
"""A schema or table name that ``<schema>__<table>`` keeps as it is, with no way to collide."""


def gold_table_name(schema_name: str, table_name: str) -> str:
    """``<schema>__<table>`` when both names are plain (lower-case letters, digits, single ``_``
    inside); otherwise the lower-cased name with other characters as ``_`` and a short hash of
    the exact names, so that tables MySQL tells apart (``Orders``/``orders``, ``a__b.c``/``a.b__c``)
    never share a gold table.

    >>> gold_table_name("shop", "order_items")
    'shop__order_items'
    >>> gold_table_name("Shop", "order-items")
    'shop__order_items__h13dd599a'
    """
    if _PLAIN_NAME.fullmatch(schema_name) and _PLAIN_NAME.fullmatch(table_name):
        return f"{schema_name}__{table_name}"
    readable = re.sub(r"[^a-z0-9_]", "_", f"{schema_name}__{table_name}".lower())
    digest = hashlib.blake2b(f"{schema_name}\x1f{table_name}".encode("utf-8", "surrogatepass"), digest_size=4)
    return f"{readable}__h{digest.hexdigest()}"


@dataclass(frozen=True)
class TargetField:
    """One typed field of ``before``/``after`` and the (column name, kind) pairs that fill it."""

    name: str
    data_type: DataType
    raw_type: DataType | None  # type of the ``<name>__raw`` companion, None when there is none
    sources: tuple[tuple[str, str], ...]


@dataclass
class TableLayout:
    """The typed fields of one gold change table, in order (``__raw`` companions after their field)."""

    fields: list[TargetField] = field(default_factory=list)

    def struct_type(self) -> StructType:
        """The type of ``before`` and ``after``."""
        out: list[StructField] = []
        for target in self.fields:
            out.append(StructField(target.name, target.data_type, True))
            if target.raw_type is not None:
                out.append(StructField(target.name + RAW_SUFFIX, target.raw_type, True))
        return StructType(out)


def table_layout(
    versions: Sequence[tuple[Sequence[str], Sequence[str]]], existing: StructType | None = None
) -> TableLayout:
    """Typed fields for a table's column versions (``(names, kinds)`` in binlog order).

    ``existing`` is the ``after`` struct of the gold table as stored, if any: fields keep the
    names and types they already have, so re-building files never changes what is stored.
    A column whose Spark type differs from its field's gets a field named ``<col>__<type>``.
    """
    known: dict[str, DataType] = {}
    raws: dict[str, DataType] = {}
    if existing is not None:
        stored = {f.name: f.dataType for f in existing.fields}
        known = {n: t for n, t in stored.items() if not (n.endswith(RAW_SUFFIX) and n[: -len(RAW_SUFFIX)] in stored)}
        raws = {n: stored[n + RAW_SUFFIX] for n in known if n + RAW_SUFFIX in stored}
    order: list[str] = []
    types: dict[str, DataType] = {}
    sources: dict[str, list[tuple[str, str]]] = {}

    def place(name: str, kind: str) -> None:
        wanted = spark_type(kind)
        for candidate in (name, name + type_suffix(kind)):
            have = types.get(candidate, known.get(candidate))
            if have is None or have == wanted:
                if candidate not in types:
                    order.append(candidate)
                    types[candidate] = wanted
                    sources[candidate] = []
                if (name, kind) not in sources[candidate]:
                    sources[candidate].append((name, kind))
                companion = raw_type(kind)
                if companion is not None:
                    raws.setdefault(candidate, companion)
                return
        raise ValueError(f"column {name!r}: no field fits kind {kind!r}")

    for name in known:  # stored fields first, in their stored order
        order.append(name)
        types[name] = known[name]
        sources[name] = []
    for names, kinds in versions:
        for name, kind in zip(names, kinds, strict=True):
            place(name, kind)
    return TableLayout([TargetField(n, types[n], raws.get(n), tuple(sources[n])) for n in order])


_ZERO_YEAR = "0000"


def _text_value(text: Column, kind: str, undecoded: Column, name: str) -> tuple[Column, Column | None]:
    """(typed value, raw companion or None) of one column's MySQL text under ``kind``."""
    conversion = conversion_of(kind)
    target = spark_type(kind)
    if conversion in ("timestamp", "date"):
        typed = F.when(F.substring(text, 1, 4) != _ZERO_YEAR, text.try_cast(target))
        return typed, F.when(text.isNotNull() & typed.isNull(), text)
    if conversion in ("text", "json"):
        # text whose bytes do not decode ("hex:..."), a partial JSON update ({"json_diffs": ...})
        other = F.coalesce(F.array_contains(undecoded, name), F.lit(False))
        kept = F.unhex(F.substring(text, 5, 1 << 30)) if conversion == "text" else text
        return F.when(~other, text), F.when(other, kept)
    if conversion == "binary":
        return F.unhex(F.substring(text, 5, 1 << 30)), None
    if conversion == "vector":
        return F.from_json(text, ArrayType(FloatType(), True)), None
    if conversion == "bit":
        bits = text.try_cast(DecimalType(20, 0))
        two_63 = F.lit(str(1 << 63)).cast(DecimalType(20, 0))
        wrapped = F.when(bits >= two_63, bits - two_63 - two_63).otherwise(bits)
        return wrapped.cast(LongType()), None
    if isinstance(target, StringType):
        return text, None
    return text.try_cast(target), None


def _image(side: str, layout: TableLayout) -> Column:
    """The typed struct of one image (``before`` or ``after``); NULL when the image does not exist."""
    names = sorted({name for target in layout.fields for name, _ in target.sources})
    parsed = F.from_json(F.col(side), StructType([StructField(n, StringType(), True) for n in names]))
    kinds = F.map_from_arrays(F.col("column_names"), F.col("column_kinds"))
    undecoded = F.col(f"undecoded_{side}")
    values: list[Column] = []
    for target in layout.fields:
        typed: Column = F.lit(None).cast(target.data_type)
        raw_type_ = target.raw_type
        raw: Column | None = None if raw_type_ is None else F.lit(None).cast(raw_type_)
        for name, kind in target.sources:
            value, raw_value = _text_value(parsed.getField(name), kind, undecoded, name)
            this = kinds.getItem(name) == F.lit(kind)
            typed = F.when(this, value.cast(target.data_type)).otherwise(typed)
            if raw is not None and raw_type_ is not None and raw_value is not None:
                raw = F.when(this, raw_value.cast(raw_type_)).otherwise(raw)
        values.append(typed.alias(target.name))
        if raw is not None:
            values.append(raw.alias(target.name + RAW_SUFFIX))
    return F.when(F.col(side).isNotNull(), F.struct(*values)).alias(side)


TYPED_COORDINATES = [
    "file",
    "file_name",
    "offset",
    "inner_index",
    "row_index",
    "event_type",
    "gtid",
    "commit_timestamp",
    "event_timestamp",
    "server_id",
    "schema_name",
    "table_name",
    "table_id",
    "op",
]
"""Columns every typed change table starts with (as in ``changes``)."""


def typed_changes(layout: TableLayout) -> Callable[[DataFrame], DataFrame]:
    """``changes`` rows of one table -> its typed change rows (see the module doc)."""

    def transform(changes: DataFrame) -> DataFrame:
        return changes.select(
            *TYPED_COORDINATES,
            _image("before", layout),
            _image("after", layout),
            F.struct(F.col("absent_before").alias("before"), F.col("absent_after").alias("after")).alias(
                "absent_columns"
            ),
        )

    return transform


__all__ = [
    "ROWS_EVENT_TYPES",
    "TYPED_COORDINATES",
    "TableLayout",
    "TargetField",
    "changes_of",
    "decode_rows_events",
    "gold_table_name",
    "maps_in_force",
    "problems_of",
    "rows_input",
    "table_layout",
    "transaction_boundaries",
    "typed_changes",
    "with_commit_timestamps",
    "with_row_counts",
]
