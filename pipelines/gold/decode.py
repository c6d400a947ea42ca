"""Decoding rows events one at a time, each with its table map in force, inside Spark's Python workers.

Every input row (:data:`pipelines.gold.schema.ROWS_INPUT`) is a rows event that already carries
the TABLE_MAP body in force for it (or null when none is) and both FORMAT_DESCRIPTIONs, so
events decode independently of each other and of the file they come from: Spark can spread
them over any partitioning.  The result is what :class:`binlog_core.decoder.BinlogDecoder`
produces for the same event, row for row:

* a rows event whose header does not decode, or which has no table map in force
  (``UNKNOWN_TABLE_ID``), or whose rows do not decode, yields one ``problem`` and no rows;
* warnings (text kept as bytes) yield a ``problem`` of severity ``warning`` and the rows.

Descriptions and plans are cached per worker: ``FormatDescription.from_json`` per string and one
:class:`~binlog_core.rows.TablePlan` per (map body, description, names).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from binlog_core.columns import ABSENT, DecodeOptions
from binlog_core.constants import event_type_name
from binlog_core.errors import BinlogError, UnknownTableIdError, as_event_problem
from binlog_core.event import FormatDescription
from binlog_core.render import render_image
from binlog_core.rows import JsonPartialUpdate, Row, TablePlan, UndecodedText, decode_rows, decode_rows_header
from binlog_core.table_map import Column, TableMap, decode_table_map
from pipelines.gold.columns import completed_columns
from pipelines.gold.schema import DECODED
from pipelines.gold.types import column_kind

_OTHER_FORMS = (UndecodedText, JsonPartialUpdate)
"""Values an image holds in another form: text whose bytes do not decode, a partial JSON update."""

_CACHE_LIMIT = 4096
"""Distinct descriptions and table plans kept per worker."""

_DECODED_FIELDS = [field.name for field in DECODED.fields]
_HISTORY_FIELDS = ("name", "type", "charset", "collation")

HistoryKey = tuple[tuple[str | None, ...], ...]
"""Schema-history columns as a hashable cache key: ``(name, type, charset, collation)`` each."""


def history_key(columns: list[dict[str, Any]] | None) -> HistoryKey | None:
    """The cache key of a row's ``history_columns`` (Arrow gives them as dicts)."""
    if columns is None:
        return None
    return tuple(tuple(c.get(f) for f in _HISTORY_FIELDS) for c in columns)


def _arrow_schema() -> pa.Schema:
    return to_arrow_schema(DECODED)


class _Table:
    """A TABLE_MAP ready to decode rows: its plan, the names shown and each column's gold kind."""

    __slots__ = ("columns", "kinds", "names", "plan", "table_map")

    def __init__(self, table_map: TableMap, plan: TablePlan, columns: tuple[Column, ...]) -> None:
        self.table_map = table_map
        self.plan = plan
        self.columns = columns
        self.names = [c.display_name for c in columns]
        self.kinds = [column_kind(c) for c in columns]


class RowsDecoder:
    """Decodes rows events given with their table maps; one per Python worker (caches inside)."""

    def __init__(self, options: DecodeOptions | None = None) -> None:
        self.options = options or DecodeOptions()
        self._fdes: dict[str, FormatDescription] = {}
        self._tables: dict[tuple[bytes, str, HistoryKey | None], _Table] = {}

    def fde(self, text: str) -> FormatDescription:
        """The description stored as ``text`` (cached)."""
        found = self._fdes.get(text)
        if found is None:
            if len(self._fdes) >= _CACHE_LIMIT:
                self._fdes.clear()
            found = self._fdes[text] = FormatDescription.from_json(text)
        return found

    def table(self, body: bytes, fde_text: str, history: HistoryKey | None) -> _Table:
        """The decoded map and plan of a TABLE_MAP body, completed by the schema history (cached)."""
        key = (body, fde_text, history)
        found = self._tables.get(key)
        if found is None:
            fde = self.fde(fde_text)
            table_map = decode_table_map(body, fde)
            specs = None if history is None else [dict(zip(_HISTORY_FIELDS, c, strict=True)) for c in history]
            columns = completed_columns(table_map.columns, specs)
            if columns != table_map.columns:
                table_map = replace(table_map, columns=columns)
            if len(self._tables) >= _CACHE_LIMIT:
                self._tables.clear()
            found = self._tables[key] = _Table(table_map, TablePlan(table_map, self.options, fde), columns)
        return found

    def decode_event(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The output rows (changes and problems) of one input row (a dict of ROWS_INPUT fields)."""
        type_code = event["event_type"]
        base = {
            "file": event["file"],
            "file_name": event["file_name"],
            "offset": event["offset"],
            "inner_index": event["inner_index"],
            "event_type": event_type_name(type_code),
            "gtid": event["gtid"],
            "timestamp": event["timestamp"],
            "server_id": event["server_id"],
        }
        problems: list[BinlogError] = []
        out: list[dict[str, Any]] = []
        try:
            header = decode_rows_header(event["body"], type_code, self.fde(event["format_description"]))
            if event["map_body"] is None:
                raise UnknownTableIdError(f"table id {header.table_id} has no TABLE_MAP in force in this file")
            history = history_key(event["history_columns"])
            table = self.table(event["map_body"], event["map_format_description"], history)
            pairs = decode_rows(header, table.plan, problems)
        except BinlogError as exc:
            problems = [as_event_problem(exc)]
            pairs = []
        else:
            tm = table.table_map
            for index, (before, after) in enumerate(pairs):
                out.append(
                    {
                        **base,
                        "kind": "change",
                        "row_index": index,
                        "schema_name": tm.schema,
                        "table_name": tm.table,
                        "table_id": tm.table_id,
                        "op": header.kind.op,
                        "before": _image_json(before, table.columns),
                        "after": _image_json(after, table.columns),
                        "absent_before": _absent(before, table.names),
                        "absent_after": _absent(after, table.names),
                        "undecoded_before": _undecoded(before, table.names),
                        "undecoded_after": _undecoded(after, table.names),
                        "column_names": table.names,
                        "column_kinds": table.kinds,
                    }
                )
        for problem in problems:
            out.append(
                {
                    **base,
                    "kind": "problem",
                    "code": problem.code,
                    "severity": problem.severity,
                    "path": " -> ".join([base["event_type"], *problem.path]),
                    "message": problem.message,
                    "problem_body": event["body"] if problem.severity == "error" else None,
                }
            )
        return out

    def decode_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Decode every rows event of an Arrow batch of ROWS_INPUT rows."""
        rows: list[dict[str, Any]] = []
        for event in batch.to_pylist():
            rows.extend(self.decode_event(event))
        return pa.RecordBatch.from_pylist(
            [{name: row.get(name) for name in _DECODED_FIELDS} for row in rows], schema=_arrow_schema()
        )


def _image_json(image: Row | None, columns: tuple[Column, ...]) -> str | None:
    rendered = render_image(image, columns)
    return None if rendered is None else json.dumps(rendered, ensure_ascii=False)


def _absent(image: Row | None, names: list[str]) -> list[str] | None:
    if image is None:
        return None
    return [name for name, value in zip(names, image, strict=False) if value is ABSENT]


def _undecoded(image: Row | None, names: list[str]) -> list[str] | None:
    """Columns whose image holds another form than the value: text kept as bytes, JSON diffs."""
    if image is None:
        return None
    return [name for name, value in zip(names, image, strict=False) if isinstance(value, _OTHER_FORMS)]


def decode_partition(options: DecodeOptions) -> Any:
    """The ``mapInArrow`` function: decode each batch of a partition with one :class:`RowsDecoder`."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        decoder = RowsDecoder(options)
        for batch in batches:
            yield decoder.decode_batch(batch)

    return run


__all__ = ["RowsDecoder", "decode_partition"]
