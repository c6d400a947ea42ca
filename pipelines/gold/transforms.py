"""Gold transforms: rows events joined with their table maps, decoded once, and projected.

All functions here are pure ``DataFrame -> DataFrame`` transforms (or build one); the stage reads
and writes.

**Which table map is in force** for a rows event bronze recorded while walking the file
(``binlog_events.map_offset``): :func:`rows_input` is an equi-join of the rows events with
silver's ``table_maps`` keys on that position, bringing the map's ``plan_key``.  Nothing here
sorts a file's events.

**Typed change tables**: one row per row change of one source table::

    file, file_name, server, offset, inner_index, row_index, event_type, gtid, xid, trx_offset,
    trx_inner_index, commit_timestamp, event_timestamp, server_id, schema_name, table_name,
    table_id, op, before struct<col: typed, ...>, after struct<col: typed, ...>,
    absent_columns struct<before: array<string>, after: array<string>>

``before``/``after`` hold one typed field per column the table has ever had (types as in
:mod:`pipelines.gold.types`, plus ``<col>__raw`` companions), so analysts write
``after.price`` and ``SELECT after.*``; a NULL struct means the image does not exist (no
before image for an insert).  A column absent from a MINIMAL/NOBLOB image is NULL in the
struct and named in ``absent_columns``.  When DDL adds a column a new field appears; a dropped
column's field stays and is no longer filled.  When a column's type changes so that its Spark
type differs, rows with the new type fill a new field ``<col>__<type>`` (``price__decimal_12_2``)
and the old field keeps the old rows: history is never rewritten and no value is coerced.
The decode (:mod:`pipelines.gold.decode`) fills the structs straight from the decoder's values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

from binlog_core.columns import DecodeOptions
from pipelines.gold.decode import COMMON, ROWS_INPUT, Plan, decode_partition, decoded_schema
from pipelines.gold.types import RAW_SUFFIX, raw_type, spark_type, type_suffix
from pipelines.quality.rules import FIRST_OFFSETS
from pipelines.tables import CHANGES, QUARANTINE, Layer, TableSpec, conform

_DECODED = {*COMMON.names, "absent_columns", "run_id"}
"""The columns of a typed change table the decoded rows give (the others are null)."""


def rows_input(events: DataFrame, map_keys: DataFrame) -> DataFrame:
    """Rows events (bronze, trusted) with the ``plan_key`` of their TABLE_MAP in force (:data:`ROWS_INPUT`).

    ``map_keys``: silver ``table_maps`` ``file, offset, inner_index, plan_key`` of the same files;
    a rows event whose map did not decode (or with none in force) gets a null key.
    """
    keys = map_keys.select(
        F.col("file").alias("k_file"),
        F.col("offset").alias("k_offset"),
        F.coalesce("inner_index", F.lit(-1)).alias("k_inner"),
        "plan_key",
    )
    joined = events.join(
        F.broadcast(keys),
        (F.col("file") == F.col("k_file"))
        & (F.col("map_offset") == F.col("k_offset"))
        & (F.coalesce("map_inner_index", F.lit(-1)) == F.col("k_inner")),
        "left",
    )
    return joined.select(*[F.col(f.name).cast(f.dataType) for f in ROWS_INPUT.fields])


def decode_rows_events(
    plans: dict[str, Plan],
    images: Sequence[StructType],
    tables: Sequence[str],
    servers: dict[str, str],
    options: DecodeOptions,
    descriptions: dict[tuple[str, int], str] | None = None,
) -> Callable[[DataFrame], DataFrame]:
    """``rows_input -> decoded``: every rows event decoded in the partition it is in (:func:`decoded_schema`).

    ``descriptions``: the FORMAT_DESCRIPTION text at ``(file, offset)``, for the rows events with
    no map in force (their post-header is still decoded, as the decoder does)."""

    def transform(df: DataFrame) -> DataFrame:
        run = decode_partition(plans, images, tables, servers, options, descriptions)
        return df.mapInArrow(run, decoded_schema(images))

    return transform


def changes_of(run_id: str, plan_columns: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """``decoded -> changes`` rows (:data:`pipelines.tables.CHANGES`); ``plan_columns``
    (:data:`pipelines.gold.decode.PLAN_COLUMNS`, one row per plan: few) gives each change its table's column names and
    kinds, joined on ``plan_key`` rather than carried on every decoded row."""

    def transform(decoded: DataFrame) -> DataFrame:
        rows = decoded.where(F.col("kind") == "change").join(F.broadcast(plan_columns), "plan_key", "left")
        known = [c.name for c in CHANGES.columns if c.name in rows.columns]
        return rows.select(*known, F.lit(run_id).alias("run_id")).transform(conform(CHANGES))

    return transform


def typed_of(index: int, spec: TableSpec, run_id: str) -> Callable[[DataFrame], DataFrame]:
    """``decoded -> `` the rows of gold table ``index`` (``spec``: its typed change table)."""

    def transform(decoded: DataFrame) -> DataFrame:
        rows = decoded.where((F.col("kind") == "change") & (F.col("gold_table") == spec.name))
        column = f"t{index}"
        made = {
            "before": F.col(f"{column}.before"),
            "after": F.col(f"{column}.after"),
            "absent_columns": F.struct(F.col("absent_before").alias("before"), F.col("absent_after").alias("after")),
            "run_id": F.lit(run_id),
        }
        # only the table's columns: the typed structs of the other tables stay out of its plan
        return rows.select(
            *[made[c.name].alias(c.name) if c.name in made else c.name for c in spec.columns if c.name in _DECODED]
        ).transform(conform(spec))

    return transform


def _first(condition: Column) -> Column:
    """The first offsets (:data:`FIRST_OFFSETS`) of the rows where ``condition`` holds."""
    return F.slice(F.array_sort(F.collect_set(F.when(condition, F.col("offset")))), 1, FIRST_OFFSETS)


def wrong_op() -> Column:
    """Whether a change's images contradict its ``op``: insert has only an after image, delete only a
    before image, update both."""
    return (
        ((F.col("op") == "insert") & (F.col("before").isNotNull() | F.col("after").isNull()))
        | ((F.col("op") == "delete") & (F.col("before").isNull() | F.col("after").isNotNull()))
        | ((F.col("op") == "update") & (F.col("before").isNull() | F.col("after").isNull()))
    )


def facts_of(decoded: DataFrame) -> DataFrame:
    """``decoded -> `` the gold gate's counts in one pass, per file, table id and gold table (null
    for problems): ``n`` row changes; ``wrong`` changes whose images contradict their op
    (:func:`wrong_op`); ``checked`` inserts with a key and ``null_keys`` leaving it NULL (the
    decode's ``null_key``); ``accounted`` rows events (decoded or quarantined: ``event_first``);
    ``unknown`` ones lost to a table id without a map; ``problems`` (by ``code`` and ``severity``:
    the quarantine's reasons); ``early`` rows events whose transaction commits before the event's own
    time.  ``<name>_at``: first offsets of each."""
    change = F.col("kind") == "change"
    wrong = change & wrong_op()
    unknown = (F.col("kind") == "problem") & (F.col("code") == "UNKNOWN_TABLE_ID")
    early = change & (F.col("commit_timestamp") < F.col("event_timestamp"))
    null_key = F.coalesce(F.col("null_key"), F.lit(False))
    return decoded.groupBy("file", "table_id", "gold_table", "code", "severity").agg(
        F.sum(change.cast("int")).alias("n"),
        F.sum(wrong.cast("int")).alias("wrong"),
        _first(wrong).alias("wrong_at"),
        F.count("null_key").alias("checked"),
        F.sum(null_key.cast("int")).alias("null_keys"),
        _first(null_key).alias("null_key_at"),
        F.sum(F.col("event_first").cast("int")).alias("accounted"),
        F.sum(unknown.cast("int")).alias("unknown"),
        _first(unknown).alias("unknown_at"),
        F.sum((F.col("kind") == "problem").cast("int")).alias("problems"),
        F.sum((early & F.col("event_first")).cast("int")).alias("early"),
        _first(early).alias("early_at"),
    )


def problems_of(run_id: str) -> Callable[[DataFrame], DataFrame]:
    """``decoded -> quarantine`` rows (``stage = 'gold'``)."""

    def transform(decoded: DataFrame) -> DataFrame:
        rows = decoded.where(F.col("kind") == "problem").select(
            F.lit(Layer.GOLD.value).alias("stage"),
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
            F.lit(run_id).alias("run_id"),
        )
        return rows.transform(conform(QUARANTINE))

    return transform


def with_row_counts(counts: DataFrame) -> Callable[[DataFrame], DataFrame]:
    """``table_id_lifecycle -> table_id_lifecycle`` with ``rows``: the row changes of ``counts``
    (``file, table_id, counted``) per file and table id (0 for an id whose rows events held none)."""

    def transform(lifecycle: DataFrame) -> DataFrame:
        return (
            lifecycle.join(F.broadcast(counts), ["file", "table_id"], "left")
            .withColumn("rows", F.coalesce(F.col("counted"), F.lit(0)).cast("long"))
            .select(*lifecycle.columns)
        )

    return transform


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

    def routes(self, names: Sequence[str], kinds: Sequence[str]) -> tuple[tuple[int, int | None], ...]:
        """For each column of a map (``names``, ``kinds``): the index of its typed field in
        :meth:`struct_type` and of its ``__raw`` companion (None when it has none)."""
        index: dict[tuple[str, str], tuple[int, int | None]] = {}
        position = 0
        for target in self.fields:
            raw = position + 1 if target.raw_type is not None else None
            for source in target.sources:
                index[source] = (position, raw)
            position += 1 if raw is None else 2
        return tuple(index[(name, kind)] for name, kind in zip(names, kinds, strict=True))


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


__all__ = [
    "TableLayout",
    "TargetField",
    "changes_of",
    "decode_rows_events",
    "problems_of",
    "rows_input",
    "table_layout",
    "typed_of",
    "with_row_counts",
]
