"""Rows events decoded once, straight into typed Arrow for their gold table, inside Spark's Python workers.

Every input row (:data:`ROWS_INPUT`) is a rows event with the ``plan_key`` of the TABLE_MAP in
force for it (silver's ``table_maps``, joined on the map's position that bronze recorded; null
when none is).  A :class:`Plan` travels with the function for each key: the map's body, its
FORMAT_DESCRIPTION and the schema-history columns silver resolved at it, plus where each of its
columns lands in its gold table's typed images.  Events decode independently of each other and
of the file they come from, so Spark can spread them over any partitioning.  The result is what
:class:`binlog_core.decoder.BinlogDecoder` produces for the same event, row for row:

* a rows event whose header does not decode, or which has no table map in force, or one whose
  body did not decode (``UNKNOWN_TABLE_ID``), yields one ``problem`` and no rows; one whose rows
  stop decoding keeps the rows before the damage, with the ``problem``;
* warnings (text kept as bytes) yield a ``problem`` of severity ``warning`` and the rows.

One decode gives both renderings of a row change: the JSON text of ``changes`` (the values as
:mod:`binlog_core.render` renders them) and the typed ``before``/``after`` structs of its gold
table (:data:`CONVERTERS`: the decoder's values converted in Python, no text round trip).  The
output is a union (:func:`decoded_schema`): common columns, and one struct column ``t<i>`` per
gold table the decode fills (all of the run's, or one group of them:
:data:`pipelines.gold.stage.DECODE_GROUP`), set only in that table's rows; each output batch holds
one table's rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from binlog_core.columns import ABSENT, DecodeOptions
from binlog_core.constants import event_type_name
from binlog_core.errors import BinlogError, UnknownTableIdError, as_event_problem
from binlog_core.event import FormatDescription
from binlog_core.render import ImageJson, json_diffs_value, render_value
from binlog_core.rows import JsonPartialUpdate, Row, TablePlan, UndecodedText, decode_rows, decode_rows_header
from binlog_core.table_map import Column, TableMap, decode_table_map
from pipelines.gold.columns import completed_columns
from pipelines.gold.types import column_kind, conversion_of
from pipelines.tables import XID_TYPE

_NAMES = ArrayType(StringType(), True)
_STR, _LONG, _INT = StringType(), LongType(), IntegerType()

ROWS_INPUT = StructType(
    [
        StructField("file", _STR, False),
        StructField("file_name", _STR, False),
        StructField("offset", _LONG, False),
        StructField("inner_index", _INT, True),
        StructField("timestamp", _LONG, False),
        StructField("event_type", _INT, False),
        StructField("server_id", _LONG, False),
        StructField("gtid", _STR, True),
        StructField("xid", XID_TYPE, True),
        StructField("trx_offset", _LONG, True),
        StructField("trx_inner_index", _INT, True),
        StructField("commit_timestamp", TimestampType(), True),
        StructField("table_id", _LONG, True),
        StructField("map_offset", _LONG, True),  # the TABLE_MAP in force (bronze): null when none is
        StructField("map_inner_index", _INT, True),
        StructField("fde_offset", _LONG, True),  # the FORMAT_DESCRIPTION in force (bronze)
        StructField("body", BinaryType(), False),
        StructField("plan_key", _STR, True),  # null: no TABLE_MAP in force, or its body did not decode
    ]
)
"""A rows event with the plan of the table map in force: what the distributed decoder reads."""

PASSED = ["file", "file_name", "offset", "inner_index", "gtid", "xid", "trx_offset", "trx_inner_index",
          "commit_timestamp", "server_id", "plan_key"]  # fmt: skip
"""Input columns every output row of an event carries as they are."""

COMMON = StructType(
    [
        StructField("kind", _STR, False),  # change | problem
        *(ROWS_INPUT[name] for name in PASSED),
        StructField("server", _STR, True),
        StructField("row_index", _INT, True),
        StructField("event_type", _STR, False),
        StructField("event_timestamp", TimestampType(), False),
        StructField("gold_table", _STR, True),
        StructField("schema_name", _STR, True),
        StructField("table_name", _STR, True),
        StructField("table_id", _LONG, True),
        StructField("op", _STR, True),
        StructField("before", _STR, True),
        StructField("after", _STR, True),
        StructField("absent_before", _NAMES, True),
        StructField("absent_after", _NAMES, True),
        StructField("undecoded_before", _NAMES, True),
        StructField("undecoded_after", _NAMES, True),
        StructField("code", _STR, True),  # problems: BinlogError.code
        StructField("severity", _STR, True),
        StructField("path", _STR, True),
        StructField("message", _STR, True),
        StructField("problem_body", BinaryType(), True),
        StructField("event_first", BooleanType(), False),  # the first output row of its rows event
        StructField("null_key", BooleanType(), True),  # inserts with a key: whether it leaves one NULL
    ]
)
"""The columns every decoded row has (``t<i>`` typed image columns follow).

A change's column names and kinds are its plan's: they are not repeated on each row, but joined
on ``plan_key`` where a table stores them (:data:`PLAN_COLUMNS`).

``event_first`` and ``null_key`` are what the gold gate counts, known while decoding: the rows
events accounted for (one ``event_first`` row each, change or problem), and for an insert whose
TABLE_MAP carries a primary key, whether its after image holds NULL in a key column (a column
absent from the image is not NULL); null for every other row."""


PLAN_COLUMNS = StructType(
    [
        StructField("plan_key", _STR, False),
        StructField("column_names", _NAMES, False),
        StructField("column_kinds", _NAMES, False),
    ]
)
"""A plan's columns in order and their gold kinds (:func:`pipelines.gold.types.column_kind`)."""


def decoded_schema(images: Sequence[StructType]) -> StructType:
    """The decoder's output: :data:`COMMON` and ``t<i>: struct<before, after>`` per gold table ``i``."""
    typed = [
        StructField(f"t{i}", StructType([StructField("before", image, True), StructField("after", image, True)]), True)
        for i, image in enumerate(images)
    ]
    return StructType([*COMMON.fields, *typed])


# -- values ------------------------------------------------------------------------------------

Convert = Callable[[object], object]
"""A decoder value -> the typed field's value."""
ConvertRaw = Callable[[object], tuple[object, object]]
"""A decoder value -> (the typed field's value, the ``__raw`` companion's) for kinds that have one."""

_BIT_SIGN = 1 << 63


def _same(value: object) -> object:
    return value


def _bit(value: object) -> object:
    """BIT(64) as the same 64 bits in a signed long (two's complement)."""
    number = int(value)  # type: ignore[call-overload]
    return number - (1 << 64) if number >= _BIT_SIGN else number


def _decimal(value: object) -> object:
    return Decimal(str(value))


def _label(value: object) -> object:
    """ENUM/SET: the label, or the index / bitmask as text when the file carries no labels."""
    return value if isinstance(value, str) else str(value)


def _vector(value: object) -> object:
    return list(value)  # type: ignore[call-overload]


def _other(value: object) -> object:
    rendered = render_value(value)
    return rendered if isinstance(rendered, str) else json.dumps(rendered)


def _instant(value: object) -> tuple[object, object]:
    """TIMESTAMP: MySQL's UTC text -> an aware datetime; a zero or invalid date stays text."""
    try:
        return datetime.fromisoformat(str(value)).replace(tzinfo=UTC), None
    except ValueError:
        return None, value


def _wall_clock(value: object) -> tuple[object, object]:
    """DATETIME: MySQL's text -> a datetime without zone; a zero or invalid date stays text."""
    try:
        return datetime.fromisoformat(str(value)), None
    except ValueError:
        return None, value


def _date(value: object) -> tuple[object, object]:
    try:
        return date.fromisoformat(str(value)), None
    except ValueError:
        return None, value


def _text(value: object) -> tuple[object, object]:
    """Text: its string; bytes that did not decode in the column's charset go to ``__raw``."""
    if isinstance(value, UndecodedText):
        return None, bytes(value)
    return value, None


def _json(value: object) -> tuple[object, object]:
    """JSON: MySQL's text of the document; a partial update's diffs (compact JSON) go to ``__raw``."""
    if isinstance(value, JsonPartialUpdate):
        return None, json.dumps(json_diffs_value(value), ensure_ascii=False, separators=(",", ":"))
    return value, None


CONVERTERS: dict[str, Convert] = {
    "int": _same,
    "decimal": _decimal,
    "float": _same,
    "double": _same,
    "time": _same,
    "year": _same,
    "bit": _bit,
    "enum": _label,
    "set": _label,
    "binary": _same,
    "vector": _vector,
    "other": _other,
}
"""Conversion (the first part of a gold kind) -> how a decoder value becomes the typed value."""

RAW_CONVERTERS: dict[str, ConvertRaw] = {
    "timestamp": _instant,
    "datetime": _wall_clock,
    "date": _date,
    "text": _text,
    "json": _json,
}
"""Conversions whose values may not fit the typed field: they also give the ``__raw`` companion."""


def _converter(kind: str) -> tuple[Convert | None, ConvertRaw | None]:
    conversion = conversion_of(kind)
    if kind == "decimal:string":
        return _same, None
    if conversion in RAW_CONVERTERS:
        return None, RAW_CONVERTERS[conversion]
    return CONVERTERS.get(conversion, _other), None


# -- plans -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """How the rows of one TABLE_MAP shape decode and where they land (built on the driver, shipped).

    ``routes``: per map column, the index of its typed field in the table's image struct and
    of its ``__raw`` companion (None when it has none).
    """

    map_body: bytes
    fde: str
    history: tuple[tuple[Any, ...], ...] | None
    table: int
    routes: tuple[tuple[int, int | None], ...]


HISTORY_FIELDS = ("name", "type", "charset", "collation")
"""What :func:`pipelines.gold.columns.completed_columns` reads of a schema-history column."""


def table_map_of(map_body: bytes, fde_text: str, history: Iterable[Mapping[str, Any]] | None) -> TableMap:
    """The decoded TABLE_MAP, its columns completed by the schema-history columns in force at it."""
    table_map = decode_table_map(map_body, FormatDescription.from_json(fde_text))
    specs = None if history is None else [dict(c) for c in history]
    columns = completed_columns(table_map.columns, specs)
    return table_map if columns == table_map.columns else replace(table_map, columns=columns)


@dataclass
class _Ready:
    """A plan decoded in a worker: its table map, row plan, names and converters."""

    table_map: TableMap
    plan: TablePlan
    fde: FormatDescription
    columns: tuple[Column, ...]
    names: list[str]
    kinds: list[str]
    table: int
    width: int
    routes: list[tuple[int, int | None, Convert | None, ConvertRaw | None]]
    ordinal: int
    """Its place among the plans the worker has decoded (:attr:`GoldDecoder.readies`)."""
    json: ImageJson
    """The JSON text of its images (``changes``)."""
    typed: Callable[[Row], list[Any]]
    """The typed struct values of a whole image (:func:`_typed_writer`)."""


@dataclass
class _Rows:
    """Output rows of one gold table (or the problems: table -1) for one input batch."""

    events: list[int] = field(default_factory=list)
    plans: list[int] = field(default_factory=list)
    """The :attr:`_Ready.ordinal` of each change's plan (changes only)."""
    values: dict[str, list[Any]] = field(default_factory=dict)
    before: list[list[Any] | None] = field(default_factory=list)
    after: list[list[Any] | None] = field(default_factory=list)
    changes: list[tuple[Any, ...]] = field(default_factory=list)
    """One :data:`CHANGE_FIELDS` tuple per change, moved into :attr:`values` by :meth:`columns`."""

    def add(self, event: int, **values: Any) -> None:
        self.events.append(event)
        for name, value in values.items():
            self.values.setdefault(name, []).append(value)

    def columns(self) -> dict[str, list[Any]]:
        """The output values by column name (the changes' tuples transposed once per batch)."""
        if self.changes:
            for name, column in zip(CHANGE_FIELDS, zip(*self.changes, strict=True), strict=True):
                self.values[name] = list(column)
            self.changes = []
        return self.values


CHANGE_FIELDS = ("row_index", "op", "before", "after", "absent_before", "absent_after", "undecoded_before",
                 "undecoded_after", "table_id", "event_first", "null_key")  # fmt: skip
"""The per-change output columns :meth:`GoldDecoder.decode_batch` fills, in its tuples' order."""


class GoldDecoder:
    """Decodes batches of :data:`ROWS_INPUT` rows into :func:`decoded_schema` batches (one per worker)."""

    def __init__(
        self,
        plans: Mapping[str, Plan],
        images: Sequence[StructType],
        tables: Sequence[str],
        servers: Mapping[str, str],
        options: DecodeOptions | None = None,
        descriptions: Mapping[tuple[str, int], str] | None = None,
    ) -> None:
        self.plans = plans
        self.tables = tables
        self.servers = servers
        self.descriptions = descriptions or {}
        self.options = options or DecodeOptions()
        self.schema = to_arrow_schema(decoded_schema(images), timezone="UTC")
        self.common_schema = pa.schema(list(self.schema)[: len(COMMON.fields)])
        self.image_types = [self.schema.field(f"t{i}").type for i in range(len(images))]
        self.widths = [len(image.fields) for image in images]
        self._ready: dict[str, _Ready] = {}
        self.readies: list[_Ready] = []
        self._per_plan: dict[str, pa.Array] = {}
        self._fdes: dict[str, FormatDescription] = {}

    def fde(self, text: str) -> FormatDescription:
        found = self._fdes.get(text)
        if found is None:
            found = self._fdes[text] = FormatDescription.from_json(text)
        return found

    def ready(self, key: str) -> _Ready:
        """The plan of ``key``, decoded once per worker."""
        found = self._ready.get(key)
        if found is None:
            plan = self.plans[key]
            history = (
                None if plan.history is None else [dict(zip(HISTORY_FIELDS, c, strict=True)) for c in plan.history]
            )
            table_map = table_map_of(plan.map_body, plan.fde, history)
            columns = table_map.columns
            kinds = [column_kind(c) for c in columns]
            routes = [(typed, raw, *_converter(kind)) for (typed, raw), kind in zip(plan.routes, kinds, strict=True)]
            fde = self.fde(plan.fde)
            found = self._ready[key] = _Ready(
                table_map,
                TablePlan(table_map, self.options, fde),
                fde,
                columns,
                [c.display_name for c in columns],
                kinds,
                plan.table,
                self.widths[plan.table],
                routes,
                len(self.readies),
                ImageJson(columns),
                _typed_writer(routes, self.widths[plan.table]),
            )
            self.readies.append(found)
            self._per_plan.clear()
        return found

    def per_plan(self, name: str, arrow_type: pa.DataType) -> pa.Array:
        """Column ``name`` of :data:`PER_PLAN` for every plan decoded so far, by ordinal."""
        found = self._per_plan.get(name)
        if found is None:
            of = PER_PLAN[name]
            found = self._per_plan[name] = pa.array([of(ready) for ready in self.readies], type=arrow_type)
        return found

    def decode_batch(self, batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Decode every rows event of a batch; one output batch per gold table met (and problems)."""
        for table, rows in sorted(self._decode(batch).items()):
            yield self._batch(batch, table, rows)

    def _decode(self, batch: pa.RecordBatch) -> dict[int, _Rows]:
        """The output rows of a batch by gold table (-1: the problems)."""
        bodies = batch.column("body").to_pylist()
        types = batch.column("event_type").to_pylist()
        keys = batch.column("plan_key").to_pylist()
        table_ids = batch.column("table_id").to_pylist()
        maps = zip(batch.column("map_offset").to_pylist(), batch.column("map_inner_index").to_pylist(), strict=True)
        described = zip(batch.column("file").to_pylist(), batch.column("fde_offset").to_pylist(), strict=True)
        out: dict[int, _Rows] = {}
        for i, (body, type_code, key, table_id, at, fde_at) in enumerate(
            zip(bodies, types, keys, table_ids, maps, described, strict=True)
        ):
            problems: list[BinlogError] = []
            try:
                if key is None:
                    self._header_without_map(body, type_code, fde_at)
                    raise UnknownTableIdError(_no_map(table_id, *at))
                ready = self.ready(key)
                header = decode_rows_header(body, type_code, ready.fde)
                pairs = decode_rows(header, ready.plan, problems)
            except BinlogError as exc:
                problems = [as_event_problem(exc)]
                pairs = []
            else:
                rows = out.setdefault(ready.table, _Rows())
                op, table, names, text = header.kind.op, header.table_id, ready.names, ready.json.text
                key_columns = ready.table_map.primary_key if op == "insert" else ()
                for index, (before, after) in enumerate(pairs):
                    rows.events.append(i)
                    rows.changes.append(
                        (
                            index,
                            op,
                            text(before),
                            text(after),
                            _absent(before, names),
                            _absent(after, names),
                            _undecoded(before, names),
                            _undecoded(after, names),
                            table,
                            index == 0,
                            _null_key(after, key_columns) if key_columns else None,
                        )
                    )
                    rows.plans.append(ready.ordinal)
                    rows.before.append(_typed(before, ready))
                    rows.after.append(_typed(after, ready))
            if problems:
                bad = out.setdefault(-1, _Rows())
                name = event_type_name(type_code)
                for n, problem in enumerate(problems):
                    bad.add(
                        i,
                        code=problem.code,
                        severity=problem.severity,
                        path=" -> ".join([name, *problem.path]),
                        message=problem.message,
                        problem_body=body if problem.severity == "error" else None,
                        table_id=table_id,
                        event_first=n == 0 and not pairs,
                    )
        return out

    def decode_tables(self, batch: pa.RecordBatch) -> Iterator[Decoded]:
        """Decode every rows event of a batch: for each gold table met (and the problems), its rows'
        :data:`COMMON` columns, typed images and plans (:class:`Decoded`), without the union's other
        tables' columns."""
        for table, rows in sorted(self._decode(batch).items()):
            common = pa.RecordBatch.from_arrays(self._common(batch, table, rows), schema=self.common_schema)
            if table < 0:
                yield Decoded(table, common, None, None)
            else:
                images = self._images(rows, self.image_types[table])
                yield Decoded(table, common, images, pa.array(rows.plans, type=pa.int32()))

    def plan_columns(self) -> tuple[pa.Array, pa.Array]:
        """The column names and gold kinds of every plan decoded so far, by ordinal."""
        names = self._per_plan.get("column_names")
        kinds = self._per_plan.get("column_kinds")
        if names is None or kinds is None:
            names = self._per_plan["column_names"] = pa.array([r.names for r in self.readies], type=_NAMES_ARROW)
            kinds = self._per_plan["column_kinds"] = pa.array([r.kinds for r in self.readies], type=_NAMES_ARROW)
        return names, kinds

    def _header_without_map(self, body: bytes, type_code: int, fde_at: tuple[str, int | None]) -> None:
        """Decode the post-header of a rows event with no plan, as the decoder does before it looks
        for the map: a damaged header is that event's problem (``MALFORMED``), not the missing map."""
        file, offset = fde_at
        text = None if offset is None else self.descriptions.get((file, offset))
        if text is not None:
            decode_rows_header(body, type_code, self.fde(text))

    def _batch(self, batch: pa.RecordBatch, table: int, rows: _Rows) -> pa.RecordBatch:
        """The union batch of one table's rows (:func:`decoded_schema`)."""
        n = len(rows.events)
        arrays = self._common(batch, table, rows)
        for arrow_field in self.schema:
            name = arrow_field.name
            if name.startswith("t") and name[1:].isdigit():
                if int(name[1:]) != table:
                    arrays.append(pa.nulls(n, type=arrow_field.type))
                else:
                    arrays.append(self._images(rows, arrow_field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _common(self, batch: pa.RecordBatch, table: int, rows: _Rows) -> list[pa.Array]:
        """The :data:`COMMON` columns of one table's rows."""
        n = len(rows.events)
        values = rows.columns()
        take = pa.array(rows.events, type=pa.int32())
        arrays: list[pa.Array] = []
        for arrow_field in self.common_schema:
            name = arrow_field.name
            if name in PASSED:
                arrays.append(batch.column(name).take(take))
            elif name == "kind":
                arrays.append(pa.array(["change" if table >= 0 else "problem"] * n, type=pa.string()))
            elif name == "server":
                arrays.append(_mapped(batch.column("file"), self.servers.get).take(take))
            elif name == "event_type":
                arrays.append(_mapped(batch.column("event_type"), event_type_name).take(take))
            elif name == "event_timestamp":
                micros = pc.multiply(batch.column("timestamp").take(take), 1_000_000)
                arrays.append(micros.cast(arrow_field.type))
            elif name == "gold_table":
                arrays.append(pa.array([self.tables[table] if table >= 0 else None] * n, type=pa.string()))
            elif name in PER_PLAN:
                if table >= 0:
                    arrays.append(self.per_plan(name, arrow_field.type).take(pa.array(rows.plans, type=pa.int32())))
                else:
                    arrays.append(pa.nulls(n, type=arrow_field.type))
            elif name in values:
                arrays.append(pa.array(values[name], type=arrow_field.type))
            else:
                arrays.append(pa.nulls(n, type=arrow_field.type))
        return arrays

    def _images(self, rows: _Rows, struct_type: pa.StructType) -> pa.Array:
        sides = []
        for side, images in (("before", rows.before), ("after", rows.after)):
            image_type: pa.StructType = struct_type.field(side).type
            blank = [None] * image_type.num_fields
            filled = [blank if image is None else image for image in images]
            fields = zip(*filled, strict=True) if filled else [()] * image_type.num_fields  # transposed in C
            children = [pa.array(values, type=image_type.field(k).type) for k, values in enumerate(fields)]
            mask = pa.array([image is None for image in images], type=pa.bool_())
            sides.append(pa.StructArray.from_arrays(children, fields=list(image_type), mask=mask))
        return pa.StructArray.from_arrays(sides, fields=list(struct_type))


@dataclass(frozen=True)
class Decoded:
    """One gold table's rows of an input batch (``table`` -1: the problems, without images)."""

    table: int
    common: pa.RecordBatch
    """:data:`COMMON` columns."""
    images: pa.StructArray | None
    """``struct<before, after>`` of the table's typed images."""
    plans: pa.Array | None
    """Each change's plan, by its ordinal among the plans decoded (:meth:`GoldDecoder.plan_columns`)."""


_NAMES_ARROW = pa.list_(pa.string())

PER_PLAN: dict[str, Callable[[_Ready], object]] = {
    "schema_name": lambda ready: ready.table_map.schema,
    "table_name": lambda ready: ready.table_map.table,
}
"""Output columns every change of one plan shares: built once per plan, taken by position."""


def _mapped(column: pa.Array, of: Callable[[Any], str | None]) -> pa.Array:
    """``of`` applied to each value of ``column`` (few distinct ones: each is mapped once), as strings."""
    encoded = column.dictionary_encode()
    return pa.array([of(value) for value in encoded.dictionary.to_pylist()], type=pa.string()).take(encoded.indices)


def _no_map(table_id: int | None, offset: int | None, inner_index: int | None) -> str:
    """Why a rows event has no plan: no TABLE_MAP in force, or one whose body did not decode
    (the words :class:`binlog_core.decoder.BinlogDecoder` uses)."""
    if offset is None:
        return f"table id {table_id} has no TABLE_MAP in force in this file"
    inner = "" if inner_index is None else f"#{inner_index}"
    return f"table id {table_id}: the TABLE_MAP in force (at {offset}{inner}) did not decode"


def _typed_writer(
    routes: Sequence[tuple[int, int | None, Convert | None, ConvertRaw | None]], width: int
) -> Callable[[Row], list[Any]]:
    """``image -> typed struct values`` for an image of exactly these columns, as straight-line code
    compiled once per plan (:func:`_typed` does the same column by column); it raises
    ``ValueError`` for an image of another length."""
    names = [f"v{i}" for i in range(len(routes))]
    scope: dict[str, Any] = {"ABSENT": ABSENT}
    lines = ["def typed(image):", f"    [{', '.join(names)}] = image", f"    out = [None] * {width}"]
    for i, (name, (typed, raw, convert, convert_raw)) in enumerate(zip(names, routes, strict=True)):
        if convert is _same:
            value = name
        elif convert is not None:
            scope[f"c{i}"] = convert
            value = f"c{i}({name})"
        else:
            scope[f"c{i}"] = convert_raw
            value = f"c{i}({name})" + ("" if raw is not None else "[0]")
        target = f"out[{typed}]" if convert is not None or raw is None else f"out[{typed}], out[{raw}]"
        lines.append(f"    if {name} is not None and {name} is not ABSENT: {target} = {value}")
    lines.append("    return out")
    exec("\n".join(lines) + "\n", scope)  # the source names only identifiers and indexes made here
    typed_values: Callable[[Row], list[Any]] = scope["typed"]
    return typed_values


def _typed(image: Row | None, ready: _Ready) -> list[Any] | None:
    """The typed struct values of one image, in the table's field order (None: no image)."""
    if image is None:
        return None
    try:
        return ready.typed(image)
    except ValueError:  # not one value per column: column by column
        pass
    values: list[Any] = [None] * ready.width
    for value, (typed, raw, convert, convert_raw) in zip(image, ready.routes, strict=False):
        if value is None or value is ABSENT:
            continue
        if convert is not None:
            values[typed] = convert(value)
        else:
            assert convert_raw is not None
            values[typed], kept = convert_raw(value)
            if raw is not None:
                values[raw] = kept
    return values


def _null_key(image: Row | None, keys: Sequence[int]) -> bool | None:
    """Whether an insert's after image holds NULL in a key column (None: no image to check)."""
    if image is None:
        return None
    return any(k < len(image) and image[k] is None for k in keys)


def _absent(image: Row | None, names: list[str]) -> list[str] | None:
    if image is None:
        return None
    if ABSENT not in image:  # the common case, checked in C
        return []
    return [name for name, value in zip(names, image, strict=False) if value is ABSENT]


_OTHER_FORMS = frozenset({UndecodedText, JsonPartialUpdate})
"""Values an image holds in another form: text whose bytes do not decode, a partial JSON update."""


def _undecoded(image: Row | None, names: list[str]) -> list[str] | None:
    """Columns whose image holds another form than the value: text kept as bytes, JSON diffs."""
    if image is None:
        return None
    if _OTHER_FORMS.isdisjoint(map(type, image)):  # the common case, checked in C
        return []
    return [name for name, value in zip(names, image, strict=False) if type(value) in _OTHER_FORMS]


__all__ = [
    "COMMON",
    "CONVERTERS",
    "HISTORY_FIELDS",
    "PASSED",
    "PLAN_COLUMNS",
    "RAW_CONVERTERS",
    "ROWS_INPUT",
    "Decoded",
    "GoldDecoder",
    "Plan",
    "decoded_schema",
    "table_map_of",
]
