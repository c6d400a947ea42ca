"""Pull JSON column values out of the MySQL corpus files, independently of the rows decoder.

A deliberately small reader: it knows only the column types of the three corpus files that
hold MySQL JSON (INT, VARCHAR, DATE, BLOB/TEXT, TIMESTAMP2, CHAR/ENUM/SET and JSON) and the
v2 rows event layout::

    table_id:6 flags:2 extra_len:2 extra[extra_len - 2] num_columns:packed
    present_columns[(n + 7) / 8] [present_after[(n + 7) / 8] for UPDATE/PARTIAL_UPDATE]
    rows: null_bitmap[(present + 7) / 8] values...
          PARTIAL_UPDATE after image: value_options:packed
                                      [partial_bits[(JSON columns of the table + 7) / 8]] null_bitmap values...

TABLE_MAP gives the column types and their metadata (JSON: one byte, the length of the
value's length prefix).  The values come back as raw bytes, keyed by column index.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from binlog_core.cursor import Cursor
from binlog_core.framing import open_events

JSON_TYPE = 245

ROWS_EVENTS = ("WRITE_ROWS", "UPDATE_ROWS", "DELETE_ROWS", "PARTIAL_UPDATE_ROWS")


@dataclass(frozen=True)
class Image:
    """One row image: raw values by column index (``None`` for SQL NULL); diffs of partial JSON columns."""

    event_type: str
    offset: int
    inner_index: int | None
    values: dict[int, bytes | None]
    partial: frozenset[int]
    types: tuple[int, ...]


@dataclass(frozen=True)
class _Table:
    types: list[int]
    metas: list[int | tuple[int, int] | None]


def _table_map(body: bytes) -> tuple[int, _Table]:
    c = Cursor(body)
    table_id = c.uint(6, "table id")
    c.skip(2, "flags")
    c.skip(c.u8("db length") + 1, "db")
    c.skip(c.u8("table length") + 1, "table")
    types = list(c.take(c.packed_int("columns"), "types"))
    meta = Cursor(c.packed_bytes("metadata"))
    metas: list[int | tuple[int, int] | None] = []
    for t in types:
        if t == 15:  # VARCHAR: max length u16
            metas.append(meta.u16("varchar meta"))
        elif t == 254:  # STRING: real type, length
            metas.append((meta.u8("real type"), meta.u8("length")))
        elif t in (252, 245, 17):  # BLOB / JSON: length bytes; TIMESTAMP2: fsp
            metas.append(meta.u8("meta"))
        elif t in (3, 10):  # INT, DATE
            metas.append(None)
        else:
            raise NotImplementedError(f"column type {t} is not in the JSON corpus files")
    return table_id, _Table(types, metas)


def _value(c: Cursor, column_type: int, meta: int | tuple[int, int] | None) -> bytes:
    if column_type == 3:
        return c.take(4, "INT")
    if column_type == 10:
        return c.take(3, "DATE")
    if column_type == 15:
        assert isinstance(meta, int)
        return c.take(c.uint(1 if meta < 256 else 2, "length"), "VARCHAR")
    if column_type in (252, 245):
        assert isinstance(meta, int)
        return c.take(c.uint(meta, "length"), "BLOB/JSON")
    if column_type == 17:
        assert isinstance(meta, int)
        return c.take(4 + (meta + 1) // 2, "TIMESTAMP2")
    assert isinstance(meta, tuple)
    real_type, length = meta
    if real_type in (247, 248):  # ENUM, SET
        return c.take(length, "ENUM/SET")
    return c.take(c.uint(1 if length < 256 else 2, "length"), "CHAR")


def _bits(raw: bytes, n: int) -> list[bool]:
    return [bool(raw[i >> 3] >> (i & 7) & 1) for i in range(n)]


def images(path: Path) -> Iterator[Image]:
    """Every row image of every rows event in the file, in order (before image first for updates)."""
    tables: dict[int, _Table] = {}
    for ev in open_events(str(path)):
        if ev.type_name == "TABLE_MAP":
            table_id, table = _table_map(ev.body)
            tables[table_id] = table
        if ev.type_name not in ROWS_EVENTS:
            continue
        c = Cursor(ev.body)
        table = tables[c.uint(6, "table id")]
        c.skip(2, "flags")
        c.skip(c.u16("extra length") - 2, "extra")
        n = c.packed_int("columns")
        present = [_bits(c.take((n + 7) // 8, "columns present"), n)]
        if ev.type_name in ("UPDATE_ROWS", "PARTIAL_UPDATE_ROWS"):
            present.append(_bits(c.take((n + 7) // 8, "columns present after"), n))
        while not c.at_end():
            for k, columns_present in enumerate(present):
                partial: set[int] = set()
                if k == 1 and ev.type_name == "PARTIAL_UPDATE_ROWS":
                    options = c.packed_int("value options")
                    # one partial bit per JSON column of the table, present in the after image or not
                    # (MySQL sql/log_event.cc Rows_log_event::print_verbose_one_row: json_column_count())
                    json_columns = [i for i, t in enumerate(table.types) if t == JSON_TYPE]
                    if options & 1:
                        flags = _bits(c.take((len(json_columns) + 7) // 8, "partial bits"), len(json_columns))
                        partial = {col for col, flag in zip(json_columns, flags, strict=True) if flag}
                columns = [i for i in range(n) if columns_present[i]]
                nulls = _bits(c.take((len(columns) + 7) // 8, "null bitmap"), len(columns))
                values: dict[int, bytes | None] = {}
                for j, i in enumerate(columns):
                    values[i] = None if nulls[j] else _value(c, table.types[i], table.metas[i])
                yield Image(ev.type_name, ev.offset, ev.inner_index, values, frozenset(partial), tuple(table.types))


def json_values(path: Path) -> list[tuple[Image, int, bytes]]:
    """(image, column index, raw bytes) of every non-NULL JSON column value in the file."""
    return [
        (image, index, raw)
        for image in images(path)
        for index, raw in image.values.items()
        if raw is not None and image.types[index] == JSON_TYPE
    ]


def rows_queries(path: Path) -> list[str]:
    """The statement text of every ROWS_QUERY event (``binlog_rows_query_log_events``)."""
    out = []
    for ev in open_events(str(path)):
        if ev.type_name == "ROWS_QUERY":
            out.append(ev.body[1:].decode("utf-8"))  # 1 ignored length byte, then the text
    return out
