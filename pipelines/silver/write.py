"""The silver tasks: QUERY-shaped and TABLE_MAP bodies decoded once each, their tables written by the
task that decodes them.

Silver runs two Spark jobs of Python tasks over bronze's events (only the partitions they read):

1. :func:`staged_queries` decodes the QUERY-shaped events and the TABLE_MAPs whose shape changed
   (bronze flagged them), writes the ``ddl_events`` rows that are not DDL and the problems into
   their tables' files, and hands back what the schema replay needs (the DDL rows and the maps'
   shapes: few) -- the driver replays the history of each server, in binlog order;
2. :func:`staged_maps` decodes every TABLE_MAP (each distinct body once per worker), names its
   columns (:class:`Resolver`: its own names, else the schema-history version in force at it),
   writes ``table_maps`` and the problems, and hands back the table-id lifecycle, the plans gold
   decodes with and the gate's counts, per task (:class:`MapFacts`): the driver adds them up.

What is handed back is small (:data:`QUERY_OUTPUT`, :data:`MAP_OUTPUT`); no decoded map is stored
anywhere but in ``table_maps``.

:class:`Resolver` is the one definition of a map's resolved columns and of its ``plan_key``
(the hash of what decoding its rows depends on): the same answer as :func:`pipelines.silver.history.names_at`
for the position, and the key of the JSON Spark's ``to_json`` writes of those columns, so keys of
maps resolved before stay what they were.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, BooleanType, LongType, StringType, StructField, StructType

from pipelines.silver.decode import Descriptions, query_rows, table_map_rows
from pipelines.silver.history import Position, position_key
from pipelines.staging import STAGED, TableTarget, TableWriter, staged_rows
from pipelines.tables import BINLOG_EVENTS, DDL_EVENTS, HISTORY_COLUMN, TABLE_ID_LIFECYCLE, TABLE_MAPS, Layer
from pipelines.workers import rarely_collected

RESOLVED = ("resolved_columns", "resolved_column_names", "names_source", "history_version", "plan_key")
"""The ``table_maps`` columns a map's position decides (:class:`Resolver`)."""

_HISTORY_FIELDS = [f.name for f in HISTORY_COLUMN.fields]

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


MAPS_OUT = _nullable([f for f in TABLE_MAPS.schema.fields if f.name not in ("server", "run_id", *RESOLVED)] + _ERRORS)
"""Decoded TABLE_MAPs (``table_maps`` columns, names not resolved) and error rows (``problem_*`` set)."""
QUERIES_OUT = _nullable(
    [f for f in DDL_EVENTS.schema.fields if f.name not in ("event_type_name", "server", "run_id")]
    + _ERRORS
    + [StructField("body", BINLOG_EVENTS.schema["body"].dataType, True)]
)
"""Decoded QUERY events (``ddl_events`` columns, no replay yet) and error rows."""

MAP_INPUT = ("file", "file_name", "offset", "inner_index", "fde_offset", "in_force_until",
             "in_force_until_inner_index", "ended_by", "rows_events", "shape_changed", "body")  # fmt: skip
QUERY_INPUT = ("file", "file_name", "offset", "inner_index", "timestamp", "event_type", "event_type_name",
               "server_id", "event_size", "log_pos", "flags", "fde_offset", "gtid", "trx_offset", "commit_timestamp",
               "body")  # fmt: skip
"""The bronze columns each decode reads (the rest of an event row stays on disk)."""

# -- resolved columns -----------------------------------------------------------------------------


def own_columns(
    columns: Sequence[Mapping[str, Any]], has_names: bool, primary_key: Sequence[int]
) -> list[dict[str, Any]]:
    """A map's columns as schema-history columns (``HISTORY_COLUMN``): their names, the MySQL type text
    the map tells, nullability, charset and collation; the key column flags when the map tells the key
    (it names its columns, or carries a key), else null."""
    key = set(primary_key)
    tells_key = has_names or bool(key)
    return [
        {
            "position": c["position"],
            "name": c["name"],
            "type": c["mysql_type"],
            "nullable": c["nullable"],
            "charset": c["charset"],
            "collation": c["collation"],
            "default": None,
            "primary_key": (c["position"] in key) if tells_key else None,
        }
        for c in columns
    ]


_LOWER_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\u([0-9a-f]{4})")


def spark_json(columns: Sequence[Mapping[str, Any]]) -> str:
    """The JSON Spark's ``to_json`` writes for an array of ``HISTORY_COLUMN`` structs: fields in order,
    null fields left out, no spaces, text unescaped but for quotes, backslashes and control characters
    (``\\u001F``, upper-case)."""
    values = [{name: c[name] for name in _HISTORY_FIELDS if c.get(name) is not None} for c in columns]
    text = json.dumps(values, ensure_ascii=False, separators=(",", ":"))
    return _LOWER_ESCAPE.sub(lambda m: m.group(1) + "\\u" + m.group(2).upper(), text)


def plan_key(shape_key: str, columns: Sequence[Mapping[str, Any]] | None) -> str:
    """The key of what decoding a map's rows depends on: its shape and its resolved columns."""
    text = shape_key + ("" if columns is None else spark_json(columns))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


_SEED_START: Position = (-2, "", -1, -1)


@dataclass(frozen=True)
class _Version:
    start: Position
    end: Position | None
    number: int
    columns: list[dict[str, Any]] | None
    source: str


class Resolver:
    """The columns valid at each map's position, from the schema history of the maps' servers.

    A map with its own names (``binlog_row_metadata=FULL``) keeps them (:func:`own_columns`); one
    without takes the columns of its server's version of the table in force at its position (the
    latest that starts at or before it and has not ended; seed versions before every event) when
    that version has as many columns as the map; else none.  Answers are kept per shape and version:
    a binlog repeats a few shapes many times.

    ``history``: ``schema_history`` rows (with ``server``), plain data (it travels with the tasks).
    """

    def __init__(self, history: Iterable[Mapping[str, Any]]) -> None:
        self.versions: dict[tuple[str, str, str], list[_Version]] = {}
        for row in history:
            start = (
                _SEED_START
                if row["valid_from_file"] is None
                else position_key(
                    row["valid_from_file"],
                    row["valid_from_offset"],
                    row["valid_from_inner_index"],
                    row.get("valid_from_sequence"),
                )
            )
            end = (
                None
                if row["valid_to_file"] is None
                else position_key(
                    row["valid_to_file"],
                    row["valid_to_offset"],
                    row["valid_to_inner_index"],
                    row.get("valid_to_sequence"),
                )
            )
            columns = None if row["columns"] is None else [dict(c) for c in row["columns"]]
            key = (row["server"], row["schema_name"].lower(), row["table_name"].lower())
            self.versions.setdefault(key, []).append(_Version(start, end, row["version"], columns, row["source"]))
        self._known: dict[tuple[str, tuple[Any, ...] | None], tuple[Any, ...]] = {}

    def in_force(self, server: str, schema: str, table: str, here: Position) -> _Version | None:
        """The version of ``schema.table`` in force at ``here`` on ``server``."""
        for version in self.versions.get((server, schema.lower(), table.lower()), ()):
            if version.start <= here and (version.end is None or here < version.end):
                return version
        return None

    def key(self, row: Mapping[str, Any], sequence: int | None) -> tuple[Any, ...]:
        """What a map's answer depends on: its shape, and (without names of its own) the version in force
        at it (``row``: its ``table_maps`` fields and ``server``; the nested columns not needed)."""
        if row["column_names"] is not None:
            return (row["shape_key"], None)
        here = position_key(row["file"], row["offset"], row["inner_index"], sequence)
        version = self.in_force(row["server"], row["schema_name"], row["table_name"], here)
        return (row["shape_key"], None if version is None else (row["server"], version.start, version.number), version)

    def answer(self, key: tuple[Any, ...], row: Mapping[str, Any]) -> tuple[Any, ...]:
        """:data:`RESOLVED` for the answer ``key`` (:meth:`key`) names; ``row`` with its ``columns`` and
        ``primary_key`` when it has names of its own."""
        found = self._known.get(key[:2])
        if found is None:
            version: _Version | None = key[2] if len(key) > 2 else None
            if row["column_names"] is not None:
                columns: list[dict[str, Any]] | None = own_columns(row["columns"], True, row["primary_key"])
                source, number = "table_map", None
            elif version is not None and version.columns is not None and len(version.columns) == row["column_count"]:
                columns, source, number = version.columns, version.source, version.number
            else:
                columns, source, number = None, None, None
            names = None if columns is None else [c["name"] for c in columns]
            found = self._known[key[:2]] = (columns, names, source, number, plan_key(row["shape_key"], columns))
        return found

    def resolve(self, row: Mapping[str, Any], sequence: int | None) -> tuple[Any, ...]:
        """:data:`RESOLVED` of one map (``row``: its ``table_maps`` fields and ``server``)."""
        return self.answer(self.key(row, sequence), row)


_RESOLVED_TYPES = {f.name: f for f in to_arrow_schema(TABLE_MAPS.schema, timezone="UTC") if f.name in RESOLVED}

_PLACED = ("file", "offset", "inner_index", "server", "schema_name", "table_name", "column_count", "column_names",
           "shape_key")  # fmt: skip
"""What :meth:`Resolver.key` reads of a map."""


def resolved(maps: pa.Table, resolver: Resolver, sequences: Mapping[str, int | None]) -> pa.Table:
    """``maps`` (``table_maps`` fields with ``server``) with :data:`RESOLVED` set by ``resolver``: each
    distinct answer made once (the nested columns read for the first map of each) and taken by
    position; maps with names of their own are told apart by their shape alone, in Arrow."""
    answers: dict[tuple[Any, ...], int] = {}
    made: list[tuple[Any, ...]] = []
    picks = [0] * maps.num_rows

    def pick(key: tuple[Any, ...], i: int, row: dict[str, Any]) -> int:
        found = answers.get(key[:2])
        if found is None:
            if row["column_names"] is not None:
                row["columns"] = maps.column("columns")[i].as_py()
                row["primary_key"] = maps.column("primary_key")[i].as_py()
            found = answers[key[:2]] = len(made)
            made.append(resolver.answer(key, row))
        return found

    named = pc.is_valid(maps.column("column_names"))
    shapes = maps.column("shape_key").combine_chunks().dictionary_encode()
    codes = shapes.indices.to_numpy(zero_copy_only=False)
    named_rows = pc.indices_nonzero(named).to_numpy(zero_copy_only=False)
    first_of: dict[int, int] = {}
    for i in named_rows:
        first_of.setdefault(int(codes[i]), int(i))
    by_code = {}
    for code, i in first_of.items():
        row = maps.slice(i, 1).select(list(_PLACED)).to_pylist()[0]
        by_code[code] = pick((row["shape_key"], None), i, row)
    for i in named_rows:
        picks[i] = by_code[int(codes[i])]
    nameless = pc.indices_nonzero(pc.invert(named)).to_pylist()
    if nameless:
        rows = maps.take(pa.array(nameless, type=pa.int64())).select(list(_PLACED)).to_pylist()
        for i, row in zip(nameless, rows, strict=True):
            picks[i] = pick(resolver.key(row, sequences.get(row["file"])), i, row)
    at = pa.array(picks, type=pa.int32())
    out = maps.drop_columns([name for name in RESOLVED if name in maps.column_names])
    for index, name in enumerate(RESOLVED):
        field = _RESOLVED_TYPES[name]
        out = out.append_column(field, pa.array([a[index] for a in made], type=field.type).take(at))
    return out


# -- what the tasks count ---------------------------------------------------------------------------

_OFFSETS = ArrayType(LongType(), True)
_NAMES = ArrayType(StringType(), True)

LIFECYCLE = StructType([f for f in TABLE_ID_LIFECYCLE.schema.fields if f.name not in ("rows", "reused_for_other_table",
                        "reused_for_other_shape")])  # fmt: skip
"""The table-id lifecycle of the maps one task decoded (its counts add up with other tasks')."""

PLAN = StructType(
    [
        StructField("file", StringType(), False),
        StructField("plan_key", StringType(), False),
        StructField("offset", LongType(), False),
        StructField("inner", LongType(), False),
        TABLE_MAPS.schema["body"],
        TABLE_MAPS.schema["fde_offset"],
        TABLE_MAPS.schema["resolved_columns"],
    ]
)
"""A plan a file uses, at its first map in a task (``inner`` -1 outside a compressed transaction)."""

PROBLEMS = StructType(
    [
        StructField("file", StringType(), False),
        StructField("of_map", BooleanType(), False),
        StructField("code", StringType(), False),
        StructField("severity", StringType(), False),
        StructField("n", LongType(), False),
        StructField("rows_events", LongType(), False),
    ]
)
"""Quarantine rows of one file and reason (``rows_events``: those read with maps that did not decode)."""

NAMELESS = StructType([StructField("file", StringType(), False), StructField("n", LongType(), False)])
"""Maps of a file decoded without names of their own."""


def _output_schema(kinds: Sequence[tuple[str, Any]]) -> StructType:
    return StructType([StructField("kind", StringType(), False), *(StructField(k, t, True) for k, t in kinds)])


_CYCLE = [("table", "distinct"), ("fingerprint", "distinct"), ("offset", "min"), ("end", "max"), ("offset", "count"),
          ("rows_events", "sum"), ("run_id", "min")]  # fmt: skip
"""How :class:`MapFacts` adds up the maps of one file and table id."""


@dataclass
class MapFacts:
    """What one task's maps tell beyond their rows: lifecycle, plans, nameless maps (by file), counted
    batch by batch in Arrow (groups per file and table id, and per file and plan)."""

    lifecycle: list[dict[str, Any]] = field(default_factory=list)
    plans: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    nameless: dict[str, int] = field(default_factory=dict)

    def add(self, maps: pa.Table) -> None:
        offset = maps.column("offset")
        counted = pa.table(
            {
                "file": maps.column("file"),
                "file_name": maps.column("file_name"),
                "table_id": maps.column("table_id"),
                "table": pc.binary_join_element_wise(maps.column("schema_name"), maps.column("table_name"), "."),
                "fingerprint": maps.column("fingerprint"),
                "offset": offset,
                "end": pc.coalesce(maps.column("in_force_until"), offset),
                "rows_events": pc.fill_null(maps.column("rows_events"), 0),
                "run_id": maps.column("run_id"),
                "nameless": pc.cast(pc.is_null(maps.column("column_names")), pa.int64()),
            }
        )
        cycles = counted.group_by(["file", "file_name", "table_id"], use_threads=False).aggregate(_CYCLE)
        self.lifecycle += [
            {
                "file": row["file"],
                "file_name": row["file_name"],
                "table_id": row["table_id"],
                "tables": row["table_distinct"],
                "fingerprints": row["fingerprint_distinct"],
                "first_offset": row["offset_min"],
                "last_offset": row["end_max"],
                "maps": row["offset_count"],
                "rows_events": row["rows_events_sum"],
                "run_id": row["run_id_min"],
            }
            for row in cycles.to_pylist()
        ]
        for row in counted.group_by("file", use_threads=False).aggregate([("nameless", "sum")]).to_pylist():
            self.nameless[row["file"]] = self.nameless.get(row["file"], 0) + row["nameless_sum"]
        places = pa.table(
            {
                "file": maps.column("file"),
                "plan_key": maps.column("plan_key"),
                "offset": offset,
                "inner": pc.fill_null(maps.column("inner_index"), -1).cast(pa.int64()),
                "row": pa.array(range(maps.num_rows), type=pa.int64()),
            }
        )
        first = places.group_by(["file", "plan_key"], use_threads=False).aggregate([("offset", "min")])
        at_first = places.join(first, ["file", "plan_key"]).filter(pc.equal(pc.field("offset"), pc.field("offset_min")))
        for row in at_first.to_pylist():
            key = (row["file"], row["plan_key"])
            kept = self.plans.get(key)
            if kept is None or (row["offset"], row["inner"]) < (kept["offset"], kept["inner"]):
                i = row["row"]
                self.plans[key] = {
                    "file": row["file"],
                    "plan_key": row["plan_key"],
                    "offset": row["offset"],
                    "inner": row["inner"],
                    "body": maps.column("body")[i].as_py(),
                    "fde_offset": maps.column("fde_offset")[i].as_py(),
                    "resolved_columns": maps.column("resolved_columns")[i].as_py(),
                }

    def lifecycle_rows(self) -> list[dict[str, Any]]:
        """The lifecycle of each file and table id (:data:`LIFECYCLE`) the task's maps show."""
        return merged_lifecycle(self.lifecycle, finished=False)


def merged_lifecycle(rows: Iterable[Mapping[str, Any]], *, finished: bool = True) -> list[dict[str, Any]]:
    """The ``table_id_lifecycle`` rows of the tasks' lifecycles (:data:`LIFECYCLE`) added up per file
    and table id: the tables it named, its first and last offset, maps, rows events, fingerprints,
    and (``finished``) whether it was reused for another table or shape (``rows`` stays null: gold
    counts them)."""
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    for row in rows:
        key = (row["file"], row["table_id"])
        kept = merged.get(key)
        if kept is None:
            merged[key] = {**row, "tables": set(row["tables"]), "fingerprints": set(row["fingerprints"])}
            continue
        kept["tables"].update(row["tables"])
        kept["fingerprints"].update(row["fingerprints"])
        kept["first_offset"] = min(kept["first_offset"], row["first_offset"])
        kept["last_offset"] = max(kept["last_offset"], row["last_offset"])
        kept["maps"] += row["maps"]
        kept["rows_events"] += row["rows_events"]
    done = [
        {**row, "tables": sorted(row["tables"]), "fingerprints": sorted(row["fingerprints"])} for row in merged.values()
    ]
    if not finished:
        return done
    return [
        {
            **row,
            "rows": None,
            "reused_for_other_table": len(row["tables"]) > 1,
            "reused_for_other_shape": len(row["fingerprints"]) > 1,
        }
        for row in done
    ]


def merged_plans(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The plans each file uses (:data:`PLAN`), at the first map of each in the file."""
    first: dict[tuple[str, str], Mapping[str, Any]] = {}
    for row in rows:
        key = (row["file"], row["plan_key"])
        if key not in first or (row["offset"], row["inner"]) < (first[key]["offset"], first[key]["inner"]):
            first[key] = row
    return [dict(row) for row in first.values()]


# -- the tasks ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SilverTargets:
    """Where the silver tasks write, and what they write with."""

    table: TableTarget
    """``table_maps`` (the maps' task) or ``ddl_events`` (the queries' task)."""
    quarantine: TableTarget
    servers: Mapping[str, str]
    """File -> its server."""
    descriptions: Descriptions
    run_id: str


def quarantine_rows(problems: pa.Table, run_id: str) -> pa.Table:
    """Quarantine rows (``stage = 'silver'``) of decoder output rows with a ``problem_code`` (errors: the
    event did not decode; warnings: it did, something in it is unusual)."""
    n = problems.num_rows
    return pa.table(
        {
            "stage": pa.array([Layer.SILVER.value] * n, type=pa.string()),
            "file": problems.column("file"),
            "file_name": problems.column("file_name"),
            "offset": problems.column("offset"),
            "inner_index": problems.column("inner_index"),
            "event_type_name": problems.column("event_type_name"),
            "code": problems.column("problem_code"),
            "severity": pc.fill_null(problems.column("problem_severity"), "error"),
            "path": problems.column("problem_path"),
            "message": problems.column("problem_message"),
            "body": problems.column("body"),
            "run_id": pa.array([run_id] * n, type=pa.string()),
        }
    )


def _problem_counts(problems: pa.Table, of_map: bool) -> list[dict[str, Any]]:
    rows: dict[tuple[str, str, str], list[int]] = {}
    events = problems.column("rows_events") if "rows_events" in problems.column_names else None
    files, codes = problems.column("file").to_pylist(), problems.column("problem_code").to_pylist()
    severities = pc.fill_null(problems.column("problem_severity"), "error").to_pylist()
    counts = [0] * problems.num_rows if events is None else [int(v or 0) for v in events.to_pylist()]
    for file, code, severity, count in zip(files, codes, severities, counts, strict=True):
        kept = rows.setdefault((file, code, severity), [0, 0])
        kept[0] += 1
        kept[1] += count if severity == "error" else 0
    return [
        {"file": f, "of_map": of_map, "code": c, "severity": s, "n": n, "rows_events": e}
        for (f, c, s), (n, e) in rows.items()
    ]


def _with_server(rows: pa.Table, targets: SilverTargets) -> pa.Table:
    encoded = rows.column("file").combine_chunks().dictionary_encode()
    servers = pa.array([targets.servers.get(f) for f in encoded.dictionary.to_pylist()], type=pa.string())
    return rows.append_column("server", servers.take(encoded.indices)).append_column(
        "run_id", pa.array([targets.run_id] * rows.num_rows, type=pa.string())
    )


def _arrow(schema: StructType) -> pa.Schema:
    return to_arrow_schema(schema, timezone="UTC")


def _output(schema: pa.Schema, kind: str, values: pa.Array) -> pa.RecordBatch:
    n = len(values)
    arrays = [values if f.name == kind else pa.nulls(n, f.type) for f in schema]
    arrays[0] = pa.array([kind] * n, type=pa.string())
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _split(batch: pa.RecordBatch) -> tuple[pa.Table, pa.Table]:
    """Decoder output as (decoded rows, problem rows)."""
    table = pa.Table.from_batches([batch])
    problem = pc.is_valid(table.column("problem_code"))
    return table.filter(pc.invert(problem)), table.filter(problem)


def staged_queries(targets: SilverTargets) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of silver's first job over QUERY-shaped events and the TABLE_MAPs whose
    shape changed (:data:`QUERY_OUTPUT`): ``ddl_events`` rows that are not DDL and the queries'
    problems written, the DDL rows and the maps' shapes (the maps with names) handed back."""
    output = to_arrow_schema(QUERY_OUTPUT, timezone="UTC")
    kinds = {f.name: f.type for f in output}
    queries_schema, maps_schema = _arrow(QUERIES_OUT), _arrow(MAPS_OUT)

    @rarely_collected
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        events, quarantine = TableWriter(targets.table), TableWriter(targets.quarantine)
        counts: list[dict[str, Any]] = []
        try:
            for batch in batches:
                classes = batch.column("event_class")
                queries = batch.filter(pc.equal(classes, "query")).select(list(QUERY_INPUT))
                maps = batch.filter(pc.equal(classes, "table_map")).select(list(MAP_INPUT))
                for out in query_rows(iter([queries]), queries_schema, targets.descriptions):
                    rows, problems = _split(out)
                    if problems.num_rows:
                        quarantine.write(quarantine_rows(problems, targets.run_id))
                        counts += _problem_counts(problems, of_map=False)
                    ddl = pc.equal(rows.column("kind"), "DDL")
                    events.write(_with_server(rows.filter(pc.invert(ddl)), targets))
                    handed = rows.filter(ddl).select([f.name for f in kinds["ddl"]])
                    if handed.num_rows:
                        entries = _entries(handed.column("status_vars").combine_chunks())
                        handed = handed.set_column(handed.schema.get_field_index("status_vars"), "status_vars", entries)
                        yield _output(output, "ddl", handed.to_struct_array().combine_chunks().cast(kinds["ddl"]))
                for out in table_map_rows(iter([maps]), maps_schema, targets.descriptions):
                    rows, _problems = _split(out)  # the maps' task reports their problems
                    shapes = _with_server(rows.filter(pc.is_valid(rows.column("column_names"))), targets)
                    if shapes.num_rows:
                        yield _output(output, "shape", pa.array(_shapes(shapes), type=kinds["shape"]))
            files = events.close() + quarantine.close()
        except BaseException:
            events.abort()
            quarantine.abort()
            raise
        if files:
            yield _output(output, "staged", staged_rows(files))
        if counts:
            yield _output(output, "problems", pa.array(counts, type=kinds["problems"]))

    return run


def _entries(maps: pa.MapArray) -> pa.ListArray:
    """A map column as lists of its ``key``/``value`` entries, in their order."""
    return pa.ListArray.from_arrays(
        maps.offsets, pa.StructArray.from_arrays([maps.keys, maps.items], ["key", "value"]), mask=maps.is_null()
    )


def map_pairs(entries: Sequence[Mapping[str, Any]] | None) -> list[tuple[Any, Any]] | None:
    """Map entries handed back (``{"key", "value"}`` each) as the ``(key, value)`` pairs of a map value."""
    return None if entries is None else [(e["key"], e["value"]) for e in entries]


def _shapes(maps: pa.Table) -> list[dict[str, Any]]:
    """The shape rows of maps with names, as the schema replay reads them."""
    return [
        {**{k: row[k] for k in _SHAPED}, "columns": own_columns(row["columns"], True, row["primary_key"])}
        for row in maps.select([*_SHAPED, "columns", "primary_key"]).to_pylist()
    ]


_SHAPED = ("file", "offset", "inner_index", "schema_name", "table_name", "fingerprint", "server")


def staged_maps(
    targets: SilverTargets, history: Sequence[Mapping[str, Any]], sequences: Mapping[str, int | None]
) -> Callable[[Iterable[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of silver's second job over every TABLE_MAP (:data:`MAP_OUTPUT`): each
    map decoded (each distinct body once), named (:class:`Resolver` over ``history``) and written with
    its problems; the lifecycle, plans, nameless maps and problems of the task handed back."""
    output = to_arrow_schema(MAP_OUTPUT, timezone="UTC")
    kinds = {f.name: f.type for f in output}
    table_schema = targets.table.schema
    maps_schema = _arrow(MAPS_OUT)

    @rarely_collected
    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        resolver = Resolver(history)
        maps, quarantine = TableWriter(targets.table), TableWriter(targets.quarantine)
        facts = MapFacts()
        counts: list[dict[str, Any]] = []
        try:
            for out in table_map_rows(iter(batches), maps_schema, targets.descriptions):
                rows, problems = _split(out)
                if problems.num_rows:
                    quarantine.write(quarantine_rows(problems, targets.run_id))
                    counts += _problem_counts(problems, of_map=True)
                if rows.num_rows:
                    named = resolved(_with_server(rows, targets), resolver, sequences)
                    facts.add(named)
                    maps.write(named.select([n for n in table_schema.names if n in named.column_names]))
            files = maps.close() + quarantine.close()
        except BaseException:
            maps.abort()
            quarantine.abort()
            raise
        if files:
            yield _output(output, "staged", staged_rows(files))
        for kind, rows_of in (("lifecycle", facts.lifecycle_rows()), ("plan", list(facts.plans.values())),
                              ("nameless", [{"file": f, "n": n} for f, n in facts.nameless.items()]),
                              ("problems", counts)):  # fmt: skip
            if rows_of:
                yield _output(output, kind, pa.array(rows_of, type=kinds[kind]))

    return run


SHAPE = StructType(
    [
        StructField("file", StringType(), False),
        StructField("offset", LongType(), False),
        TABLE_MAPS.schema["inner_index"],
        StructField("schema_name", StringType(), False),
        StructField("table_name", StringType(), False),
        StructField("fingerprint", StringType(), False),
        StructField("server", StringType(), True),
        StructField("columns", ArrayType(HISTORY_COLUMN, False), False),
    ]
)
"""A map with names where its table's shape may change: what the schema replay reads of it."""


HANDED_DDL = StructType(
    [
        StructField(
            f.name, ArrayType(StructType([StructField("key", StringType()), StructField("value", StringType())]))
        )
        if f.name == "status_vars"
        else f
        for f in QUERIES_OUT.fields
    ]
)
"""A DDL row as the queries' task hands it back: its status variables as entries, in their order (a
map handed to the driver through Spark would not keep it)."""

QUERY_OUTPUT = _output_schema([("staged", STAGED), ("ddl", HANDED_DDL), ("shape", SHAPE), ("problems", PROBLEMS)])
"""What the queries' task hands back: the files it wrote, the DDL rows, the maps' shapes, its problems."""
MAP_OUTPUT = _output_schema(
    [("staged", STAGED), ("lifecycle", LIFECYCLE), ("plan", PLAN), ("nameless", NAMELESS), ("problems", PROBLEMS)]
)
"""What the maps' task hands back: the files it wrote, lifecycles, plans, nameless maps, its problems."""

__all__ = [
    "HANDED_DDL",
    "LIFECYCLE",
    "MAPS_OUT",
    "MAP_INPUT",
    "MAP_OUTPUT",
    "NAMELESS",
    "PLAN",
    "PROBLEMS",
    "QUERIES_OUT",
    "QUERY_INPUT",
    "QUERY_OUTPUT",
    "RESOLVED",
    "SHAPE",
    "MapFacts",
    "Resolver",
    "SilverTargets",
    "map_pairs",
    "merged_lifecycle",
    "merged_plans",
    "own_columns",
    "plan_key",
    "quarantine_rows",
    "resolved",
    "spark_json",
    "staged_maps",
    "staged_queries",
]
