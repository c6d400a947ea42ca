"""Python-side decoding for silver: TABLE_MAP and QUERY bodies, one bronze row at a time.

These functions run in Spark's Python workers (``mapInArrow``) and use ``binlog_core`` only;
nothing here needs the order of a file: bronze recorded it (each map's in-force range and rows
events, each query's transaction) and it is passed through.  Rows events are never decoded here.

A row names its FORMAT_DESCRIPTION by ``(file, fde_offset)``; the descriptions of the files
being built travel with the function (:class:`Descriptions`), each parsed once per worker.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import pyarrow as pa

from binlog_core.charsets import collation_info
from binlog_core.constants import ColumnType, EventType, Flavor
from binlog_core.errors import BinlogError, as_event_problem
from binlog_core.event import Event, EventHeader, FormatDescription
from binlog_core.events import decode_body
from binlog_core.events.query import QueryEvent
from binlog_core.table_map import (
    BLOB_COMPRESSED,
    VARCHAR_COMPRESSED,
    Column,
    TableMap,
    decode_table_map,
    optional_metadata_warnings,
)
from pipelines.workers import rarely_collected

ROWS_EVENT_TYPES = (
    EventType.WRITE_ROWS_V0,
    EventType.UPDATE_ROWS_V0,
    EventType.DELETE_ROWS_V0,
    EventType.WRITE_ROWS_V1,
    EventType.UPDATE_ROWS_V1,
    EventType.DELETE_ROWS_V1,
    EventType.WRITE_ROWS,
    EventType.UPDATE_ROWS,
    EventType.DELETE_ROWS,
    EventType.PARTIAL_UPDATE_ROWS,
    EventType.WRITE_ROWS_COMPRESSED_V1,
    EventType.UPDATE_ROWS_COMPRESSED_V1,
    EventType.DELETE_ROWS_COMPRESSED_V1,
    EventType.WRITE_ROWS_COMPRESSED,
    EventType.UPDATE_ROWS_COMPRESSED,
    EventType.DELETE_ROWS_COMPRESSED,
)


@lru_cache(maxsize=64)
def description(text: str) -> FormatDescription:
    """A FORMAT_DESCRIPTION rebuilt from bronze's JSON (cached: a file has one or few)."""
    return FormatDescription.from_json(text)


Descriptions = dict[tuple[str, int], str]
"""``(file, fde_offset) -> FORMAT_DESCRIPTION JSON`` (``binlog_files.format_descriptions``)."""


def _event(row: dict[str, Any], fde_text: str) -> Event:
    """An :class:`Event` for a bronze row (header fields as bronze stored them)."""
    header = EventHeader(
        row["timestamp"], row["event_type"], row["server_id"], row["event_size"], row["log_pos"], row["flags"]
    )
    return Event(row["file_name"], row["offset"], row["inner_index"], header, row["body"], description(fde_text), None)


def shape_key(body: bytes, fde_text: str) -> str:
    """A hash of what a TABLE_MAP's rows decode with, past its table id: the body after the id, and
    what of the FORMAT_DESCRIPTION decoding reads (flavor, server version, binlog version,
    post-header lengths; not its creation time): the table id and the description's time differ
    from file to file, the plan does not."""
    fde = description(fde_text)
    id_len = 4 if fde.post_header_len(EventType.TABLE_MAP) == 6 else 6
    digest = hashlib.sha256(body[id_len:])
    digest.update(f"{fde.flavor.name}|{fde.server_version}|{fde.binlog_version}|".encode())
    digest.update(fde.post_header_lengths)
    digest.update(fde.type_permutation or b"")
    return digest.hexdigest()[:32]


# -- MySQL type text of a TABLE_MAP column ---------------------------------------------------------

_PLAIN_TYPES: dict[int, str] = {
    ColumnType.TINY: "tinyint",
    ColumnType.SHORT: "smallint",
    ColumnType.INT24: "mediumint",
    ColumnType.LONG: "int",
    ColumnType.LONGLONG: "bigint",
    ColumnType.FLOAT: "float",
    ColumnType.DOUBLE: "double",
    ColumnType.YEAR: "year",
    ColumnType.DATE: "date",
    ColumnType.NEWDATE: "date",
    ColumnType.TIME: "time",
    ColumnType.DATETIME: "datetime",
    ColumnType.TIMESTAMP: "timestamp",
    ColumnType.JSON: "json",
    ColumnType.NULL: "null",
}
_FRACTIONAL: dict[int, str] = {
    ColumnType.TIME2: "time",
    ColumnType.DATETIME2: "datetime",
    ColumnType.TIMESTAMP2: "timestamp",
}
_GEOMETRY_TYPES = (
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
)
_BLOB_SIZES = {1: "tiny", 2: "", 3: "medium", 4: "long"}
_MAX_BYTES_PER_CHAR = {
    "utf8mb4": 4,
    "utf8mb3": 3,
    "utf8": 3,
    "utf16": 4,
    "utf16le": 4,
    "utf32": 4,
    "ucs2": 2,
    "gb18030": 4,
    "ujis": 3,
    "eucjpms": 3,
    "big5": 2,
    "gbk": 2,
    "gb2312": 2,
    "sjis": 2,
    "cp932": 2,
    "euckr": 2,
}
_BINARY_COLLATION = 63


def _quoted(labels: tuple[str, ...]) -> str:
    return ",".join("'" + label.replace("'", "''") + "'" for label in labels)


def mysql_type(column: Column, charset: str | None) -> str:
    """The column's type as ``SHOW CREATE TABLE`` writes it, as far as the map tells it.

    ``int unsigned``, ``decimal(10,2)``, ``varchar(20)`` (characters: bytes over the charset's
    widest character), ``datetime(3)``, ``enum('a','b')``.  When the map leaves the answer open
    (a character column without charset metadata, an integer without signedness, an ENUM without
    its labels) the binlog type name is returned in upper case instead (``VARCHAR``, ``LONG``).
    """
    code = column.type
    sign = "" if not column.unsigned else " unsigned"
    if code in _PLAIN_TYPES:
        text = _PLAIN_TYPES[code]
        if code in {ColumnType.TINY, ColumnType.SHORT, ColumnType.INT24, ColumnType.LONG, ColumnType.LONGLONG}:
            return text + sign if column.unsigned is not None else column.type_name
        return text + sign if code in {ColumnType.FLOAT, ColumnType.DOUBLE} else text
    if code in _FRACTIONAL:
        return _FRACTIONAL[code] + (f"({column.fsp})" if column.fsp else "")
    if code == ColumnType.NEWDECIMAL:
        return f"decimal({column.precision},{column.scale}){sign}"
    if code == ColumnType.BIT:
        return f"bit({column.bits})"
    if code == ColumnType.ENUM and column.enum_values is not None:
        return f"enum({_quoted(column.enum_values)})"
    if code == ColumnType.SET and column.set_values is not None:
        return f"set({_quoted(column.set_values)})"
    if code == ColumnType.GEOMETRY:
        kind = column.geometry_type
        return _GEOMETRY_TYPES[kind] if kind is not None and 0 <= kind < len(_GEOMETRY_TYPES) else "geometry"
    if code == ColumnType.VECTOR:
        return f"vector({column.vector_dimensions})" if column.vector_dimensions is not None else "VECTOR"
    if column.collation is None:
        return column.type_name
    binary = column.collation == _BINARY_COLLATION
    if code in {ColumnType.BLOB, BLOB_COMPRESSED} and column.pack_length in _BLOB_SIZES:
        return _BLOB_SIZES[column.pack_length] + ("blob" if binary else "text")
    if charset is None:
        return column.type_name
    chars = column.length // (_MAX_BYTES_PER_CHAR.get(charset, 1) if not binary else 1)
    if code in {ColumnType.VARCHAR, ColumnType.VAR_STRING, VARCHAR_COMPRESSED}:
        return f"varbinary({chars})" if binary else f"varchar({chars})"
    if code == ColumnType.STRING:
        return f"binary({chars})" if binary else f"char({chars})"
    return column.type_name


def _map_columns(table_map: TableMap, flavor: Flavor) -> list[dict[str, Any]]:
    out = []
    for c in table_map.columns:
        info = collation_info(c.collation, flavor) if c.collation is not None else None
        charset = info.charset if info is not None else None
        out.append(
            {
                "position": c.index + 1,
                "name": c.name,
                "type": c.type_name,
                "type_code": c.type,
                "wire_type_code": c.wire_type,
                "meta": c.meta,
                "nullable": c.nullable,
                "unsigned": c.unsigned,
                "length": c.length,
                "precision": c.precision,
                "scale": c.scale,
                "fsp": c.fsp,
                "bits": c.bits,
                "pack_length": c.pack_length,
                "collation_id": c.collation,
                "charset": charset,
                "collation": info.name if info is not None else None,
                "enum_values": list(c.enum_values) if c.enum_values is not None else None,
                "set_values": list(c.set_values) if c.set_values is not None else None,
                "geometry_type": c.geometry_type,
                "vector_dimensions": c.vector_dimensions,
                "visible": c.visible,
                "primary_key_prefix": c.primary_key_prefix,
                "mysql_type": mysql_type(c, charset),
            }
        )
    return out


_PASSED = (
    "file",
    "file_name",
    "offset",
    "inner_index",
    "in_force_until",
    "in_force_until_inner_index",
    "ended_by",
    "rows_events",
    "shape_changed",
    "fde_offset",
    "body",
)
"""Bronze columns of a TABLE_MAP row that ``table_maps`` keeps as they are."""


def map_fields(table_map: TableMap, flavor: Flavor, body: bytes, fde_text: str) -> dict[str, Any]:
    """The ``table_maps`` fields a decoded map gives, the same for every event carrying its body."""
    return {
        "table_id": table_map.table_id,
        "flags": table_map.flags,
        "schema_name": table_map.schema,
        "table_name": table_map.table,
        "column_count": len(table_map.columns),
        "column_types": [c.type for c in table_map.columns],
        "column_names": [c.name for c in table_map.columns] if table_map.has_names else None,
        "columns": _map_columns(table_map, flavor),
        "primary_key": [i + 1 for i in table_map.primary_key],
        "optional_fields": list(table_map.optional_fields),
        "unknown_optional": [{"field_type": t, "value": v} for t, v in table_map.unknown_optional],
        "fingerprint": table_map.fingerprint,
        "shape_key": shape_key(body, fde_text),
        "event_type_name": "TABLE_MAP",
    }


def _error_row(row: dict[str, Any], exc: BinlogError, event_type_name: str) -> dict[str, Any]:
    return {
        "file": row["file"],
        "file_name": row["file_name"],
        "offset": row["offset"],
        "inner_index": row["inner_index"],
        "event_type_name": event_type_name,
        "problem_code": exc.code,
        "problem_severity": exc.severity,
        "problem_message": exc.message,
        "problem_path": " -> ".join(exc.path) or None,
        "body": row["body"],
        "rows_events": row.get("rows_events"),
    }


def _batch(rows: list[dict[str, Any]], schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([{name: r.get(name) for name in schema.names} for r in rows], schema=schema)


MAX_DISTINCT_MAPS = 4096
"""Distinct TABLE_MAP bodies a worker keeps decoded (a binlog repeats a few of them many times)."""


class _Decoded:
    """The TABLE_MAPs one worker decoded: each distinct ``(body, FORMAT_DESCRIPTION)`` once, its
    ``table_maps`` fields kept as one Arrow row of :attr:`fields` (or the error it raised)."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = pa.schema([schema.field(name) for name in schema.names if name in _DERIVED])
        self.index: dict[tuple[bytes, str], int | BinlogError] = {}
        self.rows: list[dict[str, Any]] = []
        self.maps: list[TableMap] = []
        self._fields: pa.Table | None = None

    def find(self, body: bytes, fde_text: str) -> int | BinlogError:
        """The position of the map in :attr:`fields`, or the error its body raises."""
        key = (body, fde_text)
        found = self.index.get(key)
        if found is None:
            fde = description(fde_text)
            try:
                table_map = decode_table_map(body, fde)
            except BinlogError as exc:
                found = as_event_problem(exc)
            else:
                found = len(self.rows)
                self.rows.append(map_fields(table_map, fde.flavor, body, fde_text))
                self.maps.append(table_map)
            self.index[key] = found
            self._fields = None
        return found

    def forget_if_full(self) -> None:
        """Start again once :data:`MAX_DISTINCT_MAPS` are kept (between batches only)."""
        if len(self.index) >= MAX_DISTINCT_MAPS:
            self.index.clear()
            self.rows.clear()
            self.maps.clear()
            self._fields = None

    @property
    def fields(self) -> pa.Table:
        """One row per decoded map: the fields of :data:`_DERIVED`."""
        if self._fields is None:
            self._fields = pa.Table.from_pylist(self.rows, schema=self.schema)
        return self._fields


_DERIVED = frozenset(
    {
        "table_id",
        "flags",
        "schema_name",
        "table_name",
        "column_count",
        "column_types",
        "column_names",
        "columns",
        "primary_key",
        "optional_fields",
        "unknown_optional",
        "fingerprint",
        "shape_key",
        "event_type_name",
    }
)
"""The ``table_maps`` fields that come from the map itself (:func:`map_fields`)."""


@rarely_collected
def table_map_rows(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, fdes: Descriptions
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: bronze TABLE_MAP events -> ``table_maps``-shaped rows and error rows.

    An error row has ``problem_code``/``problem_message``/``problem_path`` set (and the event's
    body and the rows events that read with the map); a map with a warning (an
    optional-metadata field of an unknown type, kept raw) gives its map row and a warning row
    (``problem_severity = 'warning'``).  The same body under the same FORMAT_DESCRIPTION is
    decoded once per worker; each output column is then taken from the batch (what bronze
    recorded) or from the decoded maps (what the map says) by position, in Arrow.
    """
    decoded = _Decoded(schema)
    for batch in batches:
        decoded.forget_if_full()
        bodies = batch.column("body").to_pylist()
        places = zip(batch.column("file").to_pylist(), batch.column("fde_offset").to_pylist(), strict=True)
        rows: list[int] = []
        maps: list[int] = []
        for i, (body, place) in enumerate(zip(bodies, places, strict=True)):
            found = decoded.find(body, fdes[place])
            warnings = [] if isinstance(found, BinlogError) else optional_metadata_warnings(decoded.maps[found])
            if isinstance(found, int):
                rows.append(i)
                maps.append(found)
            if isinstance(found, BinlogError) or warnings:  # rare: the rows so far, then the problems
                if rows:
                    yield _take(batch, decoded.fields, rows, maps, schema)
                    rows, maps = [], []
                row = batch.slice(i, 1).to_pylist()[0]
                problems = warnings if isinstance(found, int) else [found]
                yield _batch([_error_row(row, problem, "TABLE_MAP") for problem in problems], schema)
        if rows:
            yield _take(batch, decoded.fields, rows, maps, schema)


def _take(
    batch: pa.RecordBatch, fields: pa.Table, rows: list[int], maps: list[int], schema: pa.Schema
) -> pa.RecordBatch:
    """Output rows for the events at ``rows`` of ``batch``, whose maps are at ``maps`` of ``fields``."""
    in_batch = pa.array(rows, type=pa.int32())
    in_maps = pa.array(maps, type=pa.int32())
    columns = []
    for out in schema:
        if out.name == "in_force_from":
            column = batch.column("offset").take(in_batch)
        elif out.name in _DERIVED:
            column = fields.column(out.name).take(in_maps).combine_chunks()
        elif out.name in _PASSED:
            column = batch.column(out.name).take(in_batch)
        else:
            column = pa.nulls(len(rows), type=out.type)
        columns.append(column if column.type == out.type else column.cast(out.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def vars_of(status_vars: object) -> dict[str, Any]:
    """The fields of a (slotted) status-variables dataclass as a dict."""
    fields = getattr(status_vars, "__dataclass_fields__", {})
    return {name: getattr(status_vars, name) for name in fields}


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return "hex:" + value.hex()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def status_vars(query: QueryEvent) -> tuple[dict[str, str], str]:
    """The status variables the event carries: as strings (a map) and, typed, as a JSON object."""
    present = {
        name: _jsonable(value)
        for name, value in vars_of(query.status_vars).items()
        if value is not None and name != "codes"
    }
    as_text = {name: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for name, v in present.items()}
    return as_text, json.dumps(present, sort_keys=True)


@rarely_collected
def query_rows(batches: Iterator[pa.RecordBatch], schema: pa.Schema, fdes: Descriptions) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: QUERY-shaped bronze events -> ``ddl_events`` rows (without DDL replay) and error rows."""
    for batch in batches:
        out = []
        for row in batch.to_pylist():
            try:
                body = decode_body(_event(row, fdes[(row["file"], row["fde_offset"])]))
            except BinlogError as exc:
                out.append(_error_row(row, as_event_problem(exc), row["event_type_name"]))
                continue
            if not isinstance(body, QueryEvent):
                continue
            text = body.statement if isinstance(body.statement, str) else None
            variables, variables_json = status_vars(body)
            out.append(
                {
                    **{name: row[name] for name in _QUERY_PASSED},
                    "thread_id": body.thread_id,
                    "exec_time": body.exec_time,
                    "error_code": body.error_code,
                    "default_schema": body.schema or None,
                    "statement": text,
                    "statement_raw": None if text is not None else body.statement,
                    "kind": str(body.kind),
                    "status_vars": variables,
                    "status_vars_json": variables_json,
                    "unknown_status_code": body.unknown_status_code,
                }
            )
        if out:
            yield _batch(out, schema)


_QUERY_PASSED = (
    "file",
    "file_name",
    "offset",
    "inner_index",
    "timestamp",
    "server_id",
    "gtid",
    "trx_offset",
    "commit_timestamp",
    "event_type_name",
)
"""Bronze columns of a QUERY row that ``ddl_events`` keeps as they are."""


__all__ = [
    "ROWS_EVENT_TYPES",
    "Descriptions",
    "description",
    "map_fields",
    "mysql_type",
    "query_rows",
    "shape_key",
    "status_vars",
    "table_map_rows",
]
