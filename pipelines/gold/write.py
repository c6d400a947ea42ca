"""The gold task: each rows event decoded once, every gold table written from that one decode.

A Spark task of the gold stage walks its partition of rows events (:data:`pipelines.gold.decode.ROWS_INPUT`)
with one :class:`pipelines.gold.decode.GoldDecoder` and, for each batch's rows of each gold table,
writes (:class:`pipelines.staging.TableWriter`, files not committed yet):

* the table's typed change rows (:func:`typed_rows`: the coordinates, typed ``before``/``after``,
  ``absent_columns``);
* the same changes into ``changes`` (:func:`changes_rows`: the images as JSON text, the plan's column
  names and kinds), from the same decoded values;
* the problems into ``quarantine`` (:func:`problem_rows`, ``stage = 'gold'``).

What it hands back (:data:`OUTPUT`) is small: the files it wrote and the gold gate's counts for its
rows (:data:`GOLD_FACTS`, gathered batch by batch: :class:`Facts`), which the driver adds up per file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from binlog_core.columns import DecodeOptions
from pipelines.gold.decode import Decoded, GoldDecoder, Plan
from pipelines.quality.rules import FIRST_OFFSETS
from pipelines.staging import STAGED, TableTarget, TableWriter, staged_rows
from pipelines.tables import Layer
from pipelines.workers import rarely_collected

_OFFSETS = ArrayType(LongType(), True)
_COUNTED = ("n", "wrong", "wrong_at", "checked", "null_keys", "null_key_at", "accounted", "unknown", "unknown_at",
            "problems", "early", "early_at")  # fmt: skip

GOLD_FACTS = StructType(
    [
        StructField("file", StringType(), True),
        StructField("table_id", LongType(), True),
        StructField("gold_table", StringType(), True),
        StructField("code", StringType(), True),
        StructField("severity", StringType(), True),
        *(StructField(name, _OFFSETS if name.endswith("_at") else LongType(), True) for name in _COUNTED),
    ]
)
"""The gold gate's counts per file, table id, gold table and problem (``code``, ``severity``; null for
changes), for the rows one task decoded (several tasks may count the same key: they add up):

``n`` row changes; ``wrong`` changes whose images contradict their op (:func:`wrong_op`);
``checked`` inserts with a key and ``null_keys`` leaving it NULL (the decode's ``null_key``);
``accounted`` rows events (decoded or quarantined: ``event_first``); ``unknown`` ones lost to a table
id without a map; ``problems`` (the quarantine's rows); ``early`` rows events whose transaction
commits before the event's own time.  ``<name>_at``: the first offsets of each."""

FACTS = "facts"
STAGED_FILE = "staged"

OUTPUT = StructType(
    [
        StructField("kind", StringType(), False),
        StructField(STAGED_FILE, STAGED, True),
        StructField(FACTS, GOLD_FACTS, True),
    ]
)
"""What a gold task hands back: the files it wrote (``staged``) and its gate counts (``facts``)."""

_OUTPUT = to_arrow_schema(OUTPUT, timezone="UTC")

_COORDINATES = ("file", "file_name", "server", "offset", "inner_index", "row_index", "event_type", "gtid", "xid",
                "trx_offset", "trx_inner_index", "commit_timestamp", "event_timestamp", "server_id", "schema_name",
                "table_name", "table_id", "op")  # fmt: skip
"""The decoded columns every change table starts with."""

_CHANGES_DECODED = (*_COORDINATES, "before", "after", "absent_before", "absent_after", "undecoded_before",
                    "undecoded_after")  # fmt: skip
"""The decoded columns ``changes`` keeps (its images as JSON text)."""


@dataclass(frozen=True)
class GoldTargets:
    """Where a gold task writes: each gold table of the decode (by its index), ``changes`` and the quarantine."""

    typed: Mapping[int, TableTarget]
    changes: TableTarget
    quarantine: TableTarget
    run_id: str


def _run_id(n: int, run_id: str) -> pa.Array:
    return pa.array([run_id] * n, type=pa.string())


def changes_rows(decoded: Decoded, names: pa.Array, kinds: pa.Array, run_id: str) -> pa.Table:
    """The ``changes`` rows of one table's decoded changes: their images as JSON text, each with its
    plan's column names and kinds (``names``/``kinds`` by plan ordinal, :meth:`GoldDecoder.plan_columns`)."""
    common = decoded.common
    assert decoded.plans is not None
    columns = {name: common.column(name) for name in _CHANGES_DECODED}
    columns["column_names"] = names.take(decoded.plans)
    columns["column_kinds"] = kinds.take(decoded.plans)
    columns["run_id"] = _run_id(common.num_rows, run_id)
    return pa.table(columns)


def typed_rows(decoded: Decoded, run_id: str) -> pa.Table:
    """The rows of one typed change table: the coordinates, the typed images, the absent columns."""
    common = decoded.common
    assert decoded.images is not None
    columns: dict[str, Any] = {name: common.column(name) for name in _COORDINATES}
    columns["before"] = decoded.images.field("before")
    columns["after"] = decoded.images.field("after")
    columns["absent_columns"] = pa.StructArray.from_arrays(
        [common.column("absent_before"), common.column("absent_after")], names=["before", "after"]
    )
    columns["run_id"] = _run_id(common.num_rows, run_id)
    return pa.table(columns)


def problem_rows(decoded: Decoded, run_id: str) -> pa.Table:
    """The ``quarantine`` rows (``stage = 'gold'``) of the problems of a batch."""
    common = decoded.common
    n = common.num_rows
    return pa.table(
        {
            "stage": pa.array([Layer.GOLD.value] * n, type=pa.string()),
            "file": common.column("file"),
            "file_name": common.column("file_name"),
            "offset": common.column("offset"),
            "inner_index": common.column("inner_index"),
            "event_type_name": common.column("event_type"),
            "code": common.column("code"),
            "severity": common.column("severity"),
            "path": common.column("path"),
            "message": common.column("message"),
            "body": common.column("problem_body"),
            "run_id": _run_id(n, run_id),
        }
    )


def wrong_op(op: pa.Array, before: pa.Array, after: pa.Array) -> pa.Array:
    """Whether each change's images contradict its ``op``: insert has only an after image, delete only a
    before image, update both."""
    has_before, has_after = pc.is_valid(before), pc.is_valid(after)
    insert = pc.and_(pc.equal(op, "insert"), pc.or_(has_before, pc.invert(has_after)))
    delete = pc.and_(pc.equal(op, "delete"), pc.or_(pc.invert(has_before), has_after))
    update = pc.and_(pc.equal(op, "update"), pc.or_(pc.invert(has_before), pc.invert(has_after)))
    return pc.fill_null(pc.or_(pc.or_(insert, delete), update), False)


_KEY = ("file", "table_id", "gold_table", "code", "severity")
_SUMS = ("n", "wrong", "checked", "null_keys", "accounted", "unknown", "problems", "early")
_FIRST = {"wrong": "wrong_at", "null_keys": "null_key_at", "unknown": "unknown_at", "early_at": "early_at"}


@dataclass
class Facts:
    """The gold gate's counts (:data:`GOLD_FACTS`) of the rows decoded so far, by key."""

    sums: dict[tuple[Any, ...], list[int]] = field(default_factory=dict)
    first: dict[tuple[Any, ...], dict[str, set[int]]] = field(default_factory=dict)

    def add(self, decoded: Decoded) -> None:
        """Count one table's (or the problems') decoded rows."""
        common = decoded.common
        change = pc.equal(common.column("kind"), "change")
        problem = pc.invert(change)
        wrong = pc.and_(change, wrong_op(common.column("op"), common.column("before"), common.column("after")))
        null_key = pc.fill_null(common.column("null_key"), False)
        event_first = common.column("event_first")
        unknown = pc.and_(problem, pc.fill_null(pc.equal(common.column("code"), "UNKNOWN_TABLE_ID"), False))
        commits_before = pc.fill_null(
            pc.less(common.column("commit_timestamp"), common.column("event_timestamp")), False
        )
        early_any = pc.and_(change, commits_before)
        flags = {
            "n": change,
            "wrong": wrong,
            "checked": pc.is_valid(common.column("null_key")),
            "null_keys": null_key,
            "accounted": event_first,
            "unknown": unknown,
            "problems": problem,
            "early": pc.and_(early_any, event_first),
            "early_at": early_any,
        }
        table = pa.table(
            {
                **{name: common.column(name) for name in _KEY},
                **{name: pc.cast(flag, pa.int64()) for name, flag in flags.items()},
                "offset": common.column("offset"),
            }
        )
        grouped = table.group_by(list(_KEY), use_threads=False).aggregate([(name, "sum") for name in _SUMS])
        keys = zip(*(grouped.column(name).to_pylist() for name in _KEY), strict=True)
        counts = zip(*(grouped.column(f"{name}_sum").to_pylist() for name in _SUMS), strict=True)
        for key, values in zip(keys, counts, strict=True):
            kept = self.sums.setdefault(tuple(key), [0] * len(_SUMS))
            for i, value in enumerate(values):
                kept[i] += int(value or 0)
        for flag, at in _FIRST.items():
            if not pc.any(flags[flag]).as_py():
                continue
            hits = table.filter(flags[flag])
            places = zip(*(hits.column(name).to_pylist() for name in (*_KEY, "offset")), strict=True)
            for place in places:
                found = self.first.setdefault(tuple(place[:-1]), {}).setdefault(at, set())
                offset = place[-1]
                if len(found) < FIRST_OFFSETS or offset < max(found):
                    found.add(offset)
                    if len(found) > FIRST_OFFSETS:
                        found.discard(max(found))

    def rows(self) -> list[dict[str, Any]]:
        """One :data:`GOLD_FACTS` row per key counted."""
        out = []
        for key, values in self.sums.items():
            row: dict[str, Any] = dict(zip(_KEY, key, strict=True))
            row.update(zip(_SUMS, values, strict=True))
            first = self.first.get(key, {})
            for at in _FIRST.values():
                row[at] = sorted(first.get(at, ()))
            out.append(row)
        return out


def _output(kind: str, values: pa.Array) -> pa.RecordBatch:
    n = len(values)
    arrays = [values if f.name == kind else pa.nulls(n, f.type) for f in _OUTPUT]
    arrays[0] = pa.array([kind] * n, type=pa.string())
    return pa.RecordBatch.from_arrays(arrays, schema=_OUTPUT)


def staged_decode(
    plans: Mapping[str, Plan],
    images: Sequence[StructType],
    tables: Sequence[str],
    servers: Mapping[str, str],
    options: DecodeOptions,
    targets: GoldTargets,
    descriptions: Mapping[tuple[str, int], str] | None = None,
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of the gold decode: each batch decoded once, each table's rows, the
    changes and the problems written, the files and the gate's counts handed back (:data:`OUTPUT`)."""

    @rarely_collected
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoder = GoldDecoder(plans, images, tables, servers, options, descriptions)
        typed = {index: TableWriter(target) for index, target in targets.typed.items()}
        changes, quarantine = TableWriter(targets.changes), TableWriter(targets.quarantine)
        writers = [*typed.values(), changes, quarantine]
        facts = Facts()
        try:
            for batch in batches:
                for decoded in decoder.decode_tables(batch):
                    facts.add(decoded)
                    if decoded.table < 0:
                        quarantine.write(problem_rows(decoded, targets.run_id))
                        continue
                    names, kinds = decoder.plan_columns()
                    changes.write(changes_rows(decoded, names, kinds, targets.run_id))
                    typed[decoded.table].write(typed_rows(decoded, targets.run_id))
            files = [staged for writer in writers for staged in writer.close()]
        except BaseException:
            for writer in writers:
                writer.abort()
            raise
        if files:
            yield _output(STAGED_FILE, staged_rows(files))
        counted = facts.rows()
        if counted:
            yield _output(FACTS, pa.array(counted, type=_OUTPUT.field(FACTS).type))

    return run


__all__ = [
    "GOLD_FACTS",
    "OUTPUT",
    "Facts",
    "GoldTargets",
    "changes_rows",
    "problem_rows",
    "staged_decode",
    "typed_rows",
    "wrong_op",
]
