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
The decode (:mod:`pipelines.gold.decode`) fills the structs straight from the decoder's values and
the gold task (:mod:`pipelines.gold.write`) writes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

from pipelines.gold.decode import ROWS_INPUT
from pipelines.gold.types import RAW_SUFFIX, raw_type, spark_type, type_suffix


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
    "rows_input",
    "table_layout",
    "with_row_counts",
]
