"""JSON-ready rendering of decoded values and records, the way MySQL's ``SELECT`` shows values.

================================  ==========================================================
integers, YEAR, BIT               JSON numbers
DECIMAL                           string of its exact digits (``"-12.50"``)
FLOAT                             the shortest decimal that reads back as the same float32
DOUBLE                            the shortest decimal that reads back as the same double
temporal                          ``YYYY-MM-DD HH:MM:SS[.ffffff]`` (TIMESTAMP in UTC)
text, ENUM and SET labels, JSON   strings
binary strings, GEOMETRY          ``"hex:<lowercase hex>"`` (GEOMETRY: SRID + WKB)
VECTOR                            array of numbers
NULL                              ``null``; a column absent from the image is left out
================================  ==========================================================
"""

from __future__ import annotations

import dataclasses
import enum
import struct
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from binlog_core.columns import ABSENT
from binlog_core.constants import ColumnType
from binlog_core.json_binary import render_json_diffs
from binlog_core.rows import JsonPartialUpdate, Row
from binlog_core.table_map import Column

if TYPE_CHECKING:
    from binlog_core.decoder import RowChange

_F32 = struct.Struct("<f")


def float32_text(value: float) -> float:
    """The shortest decimal that reads back as the same float32 (how MySQL prints FLOAT)."""
    for digits in range(6, 10):
        shortest = float(f"{value:.{digits}g}")
        if _F32.unpack(_F32.pack(shortest))[0] == value:
            return shortest
    return value


def hex_text(raw: bytes) -> str:
    """Binary values as ``hex:<lowercase hex>``."""
    return "hex:" + raw.hex()


def render_value(value: object, column: Column | None = None) -> Any:
    """One column value as a JSON-ready object."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if column is not None and column.type == ColumnType.FLOAT:
            return float32_text(value)
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hex_text(bytes(value))
    if isinstance(value, tuple):
        return [render_value(v) for v in value]
    if isinstance(value, JsonPartialUpdate):
        return render_json_diffs(value.diffs, column.display_name if column is not None else "@?")
    return str(value)


def render_image(image: Row | None, columns: tuple[Column, ...]) -> dict[str, Any] | None:
    """A row image as ``{column name: value}``, leaving out columns absent from the image."""
    if image is None:
        return None
    return {
        column.display_name: render_value(value, column)
        for column, value in zip(columns, image, strict=False)
        if value is not ABSENT
    }


def render_change(change: RowChange) -> dict[str, Any]:
    """The CLI's one-line record of a row change."""
    columns = change.table_map.columns
    return {
        "file": change.file,
        "offset": change.offset,
        "inner_index": change.inner_index,
        "row_index": change.row_index,
        "event_type": change.event_type,
        "gtid": change.gtid,
        "timestamp": change.timestamp,
        "server_id": change.server_id,
        "schema": change.schema,
        "table": change.table,
        "table_id": change.table_id,
        "op": change.op,
        "before": render_image(change.before, columns),
        "after": render_image(change.after, columns),
    }


def to_jsonable(obj: object) -> Any:
    """Any decoded event body (dataclasses, enums, bytes, tuples) as JSON-ready data."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj.value if isinstance(obj, enum.Enum) else obj
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return hex_text(bytes(obj))
    if obj is ABSENT:
        return None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.repr}
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    return str(obj)
