"""How ``binlog-lakehouse sql`` prints a result: an aligned table, TSV, CSV, JSON lines or Parquet.

Every value prints so that it cannot be taken for another one:

===========================  ==================================================================
NULL                         ``NULL`` (aligned), ``\\N`` (tsv), an empty unquoted field (csv; an
                             empty string is ``""``), ``null`` (jsonl)
decimal                      its exact digits with the column's scale (``12.50``); in JSON a
                             string (``"12.50"``), so that no reader rounds it through a double
timestamp (with time zone)   ``2024-03-01 10:29:00.046+00:00``: the instant, in the session time
                             zone, with its offset (JSON: ``T`` between date and time)
timestamp_ntz                ``2024-03-01 10:29:00.046``: a wall-clock time, no offset
binary                       ``hex:`` and lower-case hex digits (``hex:00ff``), as ``binlog-dump``
struct, array, map           JSON (``{"id": "1", "total": "12.50"}``), values as in jsonl
float                        the shortest text that reads back as the same double; ``NaN``,
                             ``Infinity``, ``-Infinity`` (strings in JSON)
boolean                      ``true`` / ``false``
===========================  ==================================================================

TSV escapes backslash, tab, newline and carriage return as ``\\\\``, ``\\t``, ``\\n``, ``\\r`` (one
line per row, always); the aligned table shows tab, newline and carriage return the same way (a
backslash stays as it is there: the table is for reading, not for parsing).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import IO, Any

FORMATS = ("table", "tsv", "csv", "jsonl", "parquet")
"""``--format`` choices: ``table`` (aligned, the default), then the formats for scripts."""

NULL_TEXT = {"table": "NULL", "tsv": "\\N", "csv": ""}


def text_value(value: Any) -> str:
    """A non-NULL value as one field of the text formats (before any per-format escaping).

    >>> text_value(Decimal("12.50")), text_value(b"\\x00\\xff"), text_value({"total": Decimal("1.0")})
    ('12.50', 'hex:00ff', '{"total": "1.0"}')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, dt.datetime):
        return _timestamp(value, " ")
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return _interval(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "hex:" + bytes(value).hex()
    if isinstance(value, dict | list | tuple):
        return json.dumps(json_value(value), ensure_ascii=False)
    return str(value)


def json_value(value: Any) -> Any:
    """A value as JSON data: exact decimals and timestamps as strings, binary as ``hex:...``.

    >>> json_value({"at": dt.datetime(2024, 3, 1, 10, 29, tzinfo=dt.UTC), "n": None, "x": [1.5]})
    {'at': '2024-03-01T10:29:00+00:00', 'n': None, 'x': [1.5]}
    """
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _float(value)
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, dt.datetime):
        return _timestamp(value, "T")
    if isinstance(value, Mapping):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        if value and all(isinstance(item, tuple) and len(item) == 2 for item in value):
            return {str(json_value(key)): json_value(item) for key, item in value}  # a map as Arrow lists it
        return [json_value(item) for item in value]
    return text_value(value)


def _decimal(value: Decimal) -> str:
    """Exact digits, never an exponent (``0E-10`` -> ``0.0000000000``)."""
    return format(value, "f")


def _float(value: float) -> str:
    """Shortest round-trip text; the non-finite values by name."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _timestamp(value: dt.datetime, separator: str) -> str:
    """ISO 8601: fraction trimmed of trailing zeros; an offset exactly when the value has a zone."""
    text = value.strftime(f"%Y-%m-%d{separator}%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    offset = value.utcoffset()
    if offset is not None:
        text += _offset(offset)
    return text


def _offset(offset: dt.timedelta) -> str:
    """``+HH:MM`` (seconds too when the zone has them)."""
    sign = "-" if offset < dt.timedelta(0) else "+"
    seconds = abs(int(offset.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{sign}{hours:02d}:{minutes:02d}" + (f":{seconds:02d}" if seconds else "")


def _interval(value: dt.timedelta) -> str:
    """An interval as ISO 8601 duration seconds (``P1DT2.5S`` style kept simple: ``PT93784.5S``)."""
    seconds = Decimal(value.days * 86400 + value.seconds) + Decimal(value.microseconds) / 1_000_000
    return f"PT{_decimal(seconds.normalize()) if seconds else '0'}S"


_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_CONTROLS = str.maketrans({"\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _escaped(text: str) -> str:
    """Backslash, tab, newline, carriage return written as escapes."""
    return text.translate(_ESCAPES)


def _field(value: Any, fmt: str) -> str:
    """One field of a text format."""
    if value is None:
        return NULL_TEXT[fmt]
    text = text_value(value)
    if fmt == "csv":
        return _csv_quoted(text)
    if fmt == "table":
        return text.translate(_CONTROLS)
    return _escaped(text)


def _csv_quoted(text: str) -> str:
    """RFC 4180 quoting; an empty string is quoted so that it differs from NULL."""
    if text == "" or any(char in text for char in ',"\r\n') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def _width(text: str) -> int:
    """Terminal columns ``text`` takes (East Asian wide characters take two)."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _pad(text: str, width: int, right: bool) -> str:
    """``text`` padded to ``width`` terminal columns, flush right for numbers."""
    fill = " " * (width - _width(text))
    return fill + text if right else text + fill


_NUMERIC_PREFIXES: tuple[str, ...] = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT")
_NUMERIC_PREFIXES += ("UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "INT", "LONG", "SHORT", "UINT")


def _numeric(type_name: str) -> bool:
    """True for the numeric types (their columns are right-aligned)."""
    return type_name.upper().startswith(_NUMERIC_PREFIXES)


def write_table(columns: Sequence[str], types: Sequence[str], rows: Iterable[Sequence[Any]], out: IO[str]) -> None:
    """An aligned table for a terminal: header, rule, rows, then ``(N rows)``.

    >>> import io; buffer = io.StringIO()
    >>> write_table(["op", "n"], ["VARCHAR", "BIGINT"], [("insert", 271), (None, 3)], buffer)
    >>> print(buffer.getvalue(), end="")
    op     |   n
    -------+----
    insert | 271
    NULL   |   3
    (2 rows)
    """
    cells = [[_field(value, "table") for value in row] for row in rows]
    widths = [_width(name) for name in columns]
    for row in cells:
        widths = [max(width, _width(cell)) for width, cell in zip(widths, row, strict=True)]
    right = [_numeric(kind) for kind in types]
    out.write(" | ".join(_pad(name, w, r) for name, w, r in zip(columns, widths, right, strict=True)).rstrip() + "\n")
    out.write("-+-".join("-" * width for width in widths) + "\n")
    for row in cells:
        out.write(" | ".join(_pad(cell, w, r) for cell, w, r in zip(row, widths, right, strict=True)).rstrip() + "\n")
    count = len(cells)
    out.write(f"({count} row{'' if count == 1 else 's'})\n")


def write_delimited(columns: Sequence[str], rows: Iterable[Sequence[Any]], out: IO[str], fmt: str) -> None:
    """A header line then one line per row, ``fmt`` ``tsv`` (tab-separated) or ``csv``."""
    separator = "\t" if fmt == "tsv" else ","
    quote: Callable[[str], str] = _escaped if fmt == "tsv" else _csv_quoted
    out.write(separator.join(quote(name) for name in columns) + "\n")
    for row in rows:
        out.write(separator.join(_field(value, fmt) for value in row) + "\n")


def write_jsonl(columns: Sequence[str], rows: Iterable[Sequence[Any]], out: IO[str]) -> None:
    """One JSON object per row, keys the column names (a repeated name gets ``_2``, ``_3`` ...)."""
    keys = _unique(columns)
    for row in rows:
        record = {key: json_value(value) for key, value in zip(keys, row, strict=True)}
        out.write(json.dumps(record, ensure_ascii=False) + "\n")


def _unique(columns: Sequence[str]) -> list[str]:
    """Column names made unique for JSON keys."""
    seen: dict[str, int] = {}
    keys = []
    for name in columns:
        seen[name] = seen.get(name, 0) + 1
        keys.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return keys
