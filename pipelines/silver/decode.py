"""Python-side decoding for silver: TABLE_MAP sequences of one file, and QUERY events.

These functions run in Spark's Python workers (``groupBy("file").applyInArrow`` and
``mapInArrow``) and use ``binlog_core`` only.  :func:`maps_of_file` walks one file's TABLE_MAP,
rows-event and FORMAT_DESCRIPTION markers in file order with exactly the rules of
:class:`binlog_core.decoder.BinlogDecoder`: a map is in force from its offset until the rows
event flagged STMT_END that ends its statement, a new map of the same table id, or the next
FORMAT_DESCRIPTION; a TABLE_MAP that does not decode leaves the previous mapping of its id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import pyarrow as pa

from binlog_core.constants import EventType
from binlog_core.errors import BinlogError
from binlog_core.event import Event, EventHeader, FormatDescription
from binlog_core.events import decode_body
from binlog_core.events.query import QueryEvent
from binlog_core.table_map import TableMap, decode_table_map

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
QUERY_EVENT_TYPES = (EventType.QUERY, EventType.QUERY_COMPRESSED, EventType.EXECUTE_LOAD_QUERY)
_ROWS = frozenset(int(t) for t in ROWS_EVENT_TYPES)


@lru_cache(maxsize=64)
def description(text: str) -> FormatDescription:
    """A FORMAT_DESCRIPTION rebuilt from bronze's JSON (cached: a file has one or few)."""
    return FormatDescription.from_json(text)


def _event(row: dict[str, Any]) -> Event:
    """An :class:`Event` for a bronze row (header fields as bronze stored them)."""
    header = EventHeader(
        row["timestamp"], row["event_type"], row["server_id"], row["event_size"], row["log_pos"], row["flags"]
    )
    return Event(
        row["file_name"],
        row["offset"],
        row["inner_index"],
        header,
        row["body"],
        description(row["format_description"]),
        None,
    )


def _map_columns(table_map: TableMap) -> list[dict[str, Any]]:
    return [
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
            "collation_id": c.collation,
            "enum_values": list(c.enum_values) if c.enum_values is not None else None,
            "set_values": list(c.set_values) if c.set_values is not None else None,
            "geometry_type": c.geometry_type,
            "vector_dimensions": c.vector_dimensions,
            "visible": c.visible,
            "primary_key_prefix": c.primary_key_prefix,
        }
        for c in table_map.columns
    ]


def _map_row(row: dict[str, Any], table_map: TableMap) -> dict[str, Any]:
    return {
        "file": row["file"],
        "file_name": row["file_name"],
        "offset": row["offset"],
        "inner_index": row["inner_index"],
        "table_id": table_map.table_id,
        "flags": table_map.flags,
        "schema_name": table_map.schema,
        "table_name": table_map.table,
        "column_count": len(table_map.columns),
        "column_types": [c.type for c in table_map.columns],
        "column_names": list(table_map.column_names) if table_map.has_names else None,
        "columns": _map_columns(table_map),
        "primary_key": [i + 1 for i in table_map.primary_key],
        "optional_fields": list(table_map.optional_fields),
        "fingerprint": table_map.fingerprint,
        "in_force_from": row["offset"],
        "in_force_until": None,
        "ended_by": None,
        "rows_events": 0,
        "resolved_column_names": None,
        "names_source": None,
        "body": row["body"],
        "format_description": row["format_description"],
        "problem_code": None,
        "problem_message": None,
        "problem_path": None,
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
        "problem_message": exc.message,
        "problem_path": " -> ".join(exc.path) or None,
        "body": row["body"],
    }


def _sort_key(row: dict[str, Any]) -> tuple[int, int]:
    inner = row["inner_index"]
    return (row["offset"], -1 if inner is None else inner)


def maps_of_file(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The decoded maps of one file with their in-force ranges, plus error rows (see module doc).

    ``rows``: the file's TABLE_MAP, rows and FORMAT_DESCRIPTION events (bronze columns; ``body``
    needed for TABLE_MAP only), checksum failures already removed.
    """
    out: list[dict[str, Any]] = []
    open_maps: dict[int, dict[str, Any]] = {}

    def close_all(offset: int, reason: str) -> None:
        for mapped in open_maps.values():
            mapped["in_force_until"], mapped["ended_by"] = offset, reason
        open_maps.clear()

    cache: dict[tuple[bytes, str], TableMap] = {}
    for row in sorted(rows, key=_sort_key):
        type_code = row["event_type"]
        if type_code == EventType.FORMAT_DESCRIPTION:
            close_all(row["offset"], "format_description")
        elif type_code == EventType.TABLE_MAP:
            key = (row["body"], row["format_description"])
            try:
                table_map = cache.get(key) or decode_table_map(row["body"], description(row["format_description"]))
            except BinlogError as exc:
                out.append(_error_row(row, exc, "TABLE_MAP"))
                continue
            cache[key] = table_map
            previous = open_maps.pop(table_map.table_id, None)
            if previous is not None:
                previous["in_force_until"], previous["ended_by"] = row["offset"], "replaced"
            mapped = _map_row(row, table_map)
            open_maps[table_map.table_id] = mapped
            out.append(mapped)
        elif type_code in _ROWS:
            mapped_now = open_maps.get(row["table_id"])
            if mapped_now is not None:
                mapped_now["rows_events"] += 1
            if row["statement_end"]:
                close_all(row["offset"], "statement_end")
    return out


def maps_of_file_arrow(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``applyInArrow`` adapter of :func:`maps_of_file` (one group = one file)."""
    rows = maps_of_file(table.to_pylist())
    return pa.Table.from_pylist([{name: r.get(name) for name in schema.names} for r in rows], schema=schema)


def _status_vars(query: QueryEvent) -> dict[str, str]:
    values: dict[str, str] = {}
    for name, value in vars_of(query.status_vars).items():
        if value is None or name == "codes":
            continue
        values[name] = value if isinstance(value, str) else json.dumps(value, default=str)
    return values


def vars_of(status_vars: object) -> dict[str, Any]:
    """The fields of a (slotted) status-variables dataclass as a dict."""
    fields = getattr(status_vars, "__dataclass_fields__", {})
    return {name: getattr(status_vars, name) for name in fields}


def query_rows(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """``mapInArrow``: QUERY-shaped bronze events -> ``ddl_events`` rows (without DDL replay) and error rows."""
    for batch in batches:
        out = []
        for row in batch.to_pylist():
            try:
                body = decode_body(_event(row))
            except BinlogError as exc:
                out.append(_error_row(row, exc, row["event_type_name"]))
                continue
            if not isinstance(body, QueryEvent):
                continue
            text = body.statement if isinstance(body.statement, str) else None
            out.append(
                {
                    "file": row["file"],
                    "file_name": row["file_name"],
                    "offset": row["offset"],
                    "inner_index": row["inner_index"],
                    "timestamp": row["timestamp"],
                    "server_id": row["server_id"],
                    "gtid": row["gtid"],
                    "event_type_name": row["event_type_name"],
                    "thread_id": body.thread_id,
                    "exec_time": body.exec_time,
                    "error_code": body.error_code,
                    "default_schema": body.schema or None,
                    "statement": text,
                    "statement_raw": None if text is not None else body.statement,
                    "kind": str(body.kind),
                    "status_vars": _status_vars(body),
                    "unknown_status_code": body.unknown_status_code,
                    "objects": None,
                    "ddl_parsed": None,
                    "ddl_error": None,
                }
            )
        if out:
            yield pa.RecordBatch.from_pylist([{n: r.get(n) for n in schema.names} for r in out], schema=schema)


__all__ = ["QUERY_EVENT_TYPES", "ROWS_EVENT_TYPES", "description", "maps_of_file", "maps_of_file_arrow", "query_rows"]
