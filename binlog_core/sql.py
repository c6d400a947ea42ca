"""Row changes as MySQL-dialect SQL: exact value literals keyed by column type, the statement of
a change, and the statements that undo changes.

Every literal reads back as the value the row image holds, in the session the scripts set up
(:data:`ROW_SETTINGS`: ``SET NAMES utf8mb4``, ``time_zone = '+00:00'`` because the decoder gives
TIMESTAMP in UTC, ``sql_mode = 'NO_AUTO_VALUE_ON_ZERO'``: zero dates allowed, an explicit 0 in an
AUTO_INCREMENT column kept, backslash escapes on)::

    column type                       literal
    --------------------------------  ---------------------------------------------------------
    TINYINT ... BIGINT, YEAR          decimal digits (``-128``, ``18446744073709551615``)
    DECIMAL                           its exact digits (``-12.50``)
    FLOAT                             the shortest decimal that reads back as the same float32
                                      (``0.1``); in a WHERE, the float32 widened to double
                                      (``0.10000000149011612``), which is what the column compares as
    DOUBLE                            the shortest decimal that reads back as the same double
    NaN, +-infinity                   refused: :class:`~binlog_core.errors.NonFiniteValueError`
    BIT(n)                            ``b'0101'`` with n digits
    DATE, TIME, DATETIME, TIMESTAMP   ``'2024-02-29 12:00:00.250'`` as the decoder gives them
                                      (zero dates ``'0000-00-00'``; TIMESTAMP in UTC)
    CHAR, VARCHAR, TEXT in utf8mb4,   ``'it''s'`` (backslash, quote, NUL, CR, LF, Ctrl-Z escaped)
    utf8mb3, utf8, ascii
    text in another charset           ``_latin1 X'E9'``: the column's bytes with its charset's
                                      introducer (exact whatever the client charset is)
    text kept as bytes (it did not    ``_utf8mb4 X'FF'``, or ``X'FF'`` when the charset is unknown
    decode in its charset)
    text of a column the file names   ``X'...'``: the bytes as stored (re-encoded with the codec
    no charset for                    they were decoded with); a binary string assigned to a text
                                      column keeps its bytes
    BINARY, VARBINARY, BLOB           ``X'00FF'`` (``X''`` when empty)
    GEOMETRY                          ``X'...'``: SRID (4 bytes LE) + WKB, the stored form
    VECTOR                            ``X'...'``: the float32 elements, little-endian
    ENUM, SET                         the label(s) ``'small'``, ``'x,z'``; the 1-based index or
                                      the bitmask (``3``) when the file carries no labels
    JSON (MySQL)                      its text ``'{"a": 1}'``; ``CAST(... AS JSON)`` in a WHERE;
                                      a partial update as ``JSON_REPLACE(`col`, '$.a', CAST(...))``;
                                      a document holding opaque values (DATE, DECIMAL, ... stored as
                                      JSON) is refused: its text does not rebuild it
    NULL                              ``NULL`` (``IS NULL`` in a WHERE)

A negative integer of a column whose signedness the file does not carry (no FULL metadata) is
refused (:class:`~binlog_core.errors.AmbiguousValueError`): it may be a large unsigned value.

**Which row.**  A row is found by its primary key when the TABLE_MAP names one (FULL metadata):
``WHERE `id` = 7``.  Otherwise by every column of the image, NULL-safe, text and binary columns
compared byte for byte (``CAST(`c` AS BINARY) <=> 'x'``: a case-insensitive collation would find
another row), with ``LIMIT 1`` (rows equal in every column are interchangeable).

**Partial images** (``binlog_row_image`` MINIMAL/NOBLOB leave columns out).  The row an UPDATE or
DELETE changes is found by the columns the server logged to find it (MINIMAL: the primary key).
The values an INSERT or UPDATE writes must all be in the image: a partial insert image lacks the
values the server filled in, and a partial update image does not prove the columns it leaves out
unchanged (MariaDB runs a REPLACE into a table with only a primary key as an update and resets
the columns the REPLACE does not name without logging them).  Undoing needs the key of an
inserted row (or all of it) and the whole before image of a deleted or updated row.

**What is refused** (:class:`~binlog_core.errors.SqlError`, located at the change's file,
offset and row, with the column in its path): a table map without column names
(:class:`~binlog_core.errors.ColumnNamesUnknownError`), a value a statement needs that the
image does not hold (:class:`~binlog_core.errors.PartialImageError`, naming the columns), and
the values above.  Nothing is guessed.

:func:`change_statement` writes the statement that applies a change; :func:`undo_statements`
the statements that revert changes, newest first (``mariadb-binlog --flashback``'s rules:
an insert becomes a DELETE by key, a delete an INSERT of the before image, an update an
UPDATE back to the before image found by the after image's key).  Both take the decoder's
:class:`~binlog_core.decoder.RowChange` or anything with its fields (:class:`ChangeLike`)::

    for change in item.rows:
        print(change_statement(change))     # INSERT INTO `shop`.`orders` (`id`, ...) VALUES (...);
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Final, Protocol

from binlog_core.charsets import codec_for_collation, collation_info
from binlog_core.columns import ABSENT
from binlog_core.constants import ColumnType
from binlog_core.errors import (
    AmbiguousValueError,
    ColumnNamesUnknownError,
    NonFiniteValueError,
    PartialImageError,
    SqlError,
)
from binlog_core.json_binary import JsonDiff, JsonWithOpaque
from binlog_core.render import float32_text
from binlog_core.rows import JsonPartialUpdate, Row, UndecodedText
from binlog_core.table_map import BLOB_COMPRESSED, VARCHAR_COMPRESSED, Column, TableMap

ROW_SQL_MODE: Final = "NO_AUTO_VALUE_ON_ZERO"
"""The ``sql_mode`` row statements run in: not strict (a stored ENUM error value ``''`` and zero
dates are written back as they are), no NO_ZERO_DATE, no NO_BACKSLASH_ESCAPES, no ANSI_QUOTES."""

ROW_SETTINGS: Final = (
    ("time_zone", "'+00:00'"),
    ("sql_mode", f"'{ROW_SQL_MODE}'"),
    ("collation_connection", "'utf8mb4_general_ci'"),
    ("sql_auto_is_null", "0"),
)
"""The session (``SET @@session.<variable>=<value>``, after ``SET NAMES utf8mb4``) the literals of
this module are exact in: TIMESTAMP values are UTC; ``sql_auto_is_null`` off, or ``<col> IS NULL``
would find the last inserted AUTO_INCREMENT row."""


class ChangeLike(Protocol):
    """What the statements of a row change need: the decoder's ``RowChange`` has it all.

    ``before``/``after`` hold one value per column of ``table_map`` (``ABSENT`` when the image
    leaves the column out); the location fields name the change in error messages.
    """

    @property
    def op(self) -> str: ...  # insert | update | delete
    @property
    def table_map(self) -> TableMap: ...
    @property
    def before(self) -> Row | None: ...
    @property
    def after(self) -> Row | None: ...
    @property
    def file(self) -> str: ...
    @property
    def offset(self) -> int: ...
    @property
    def inner_index(self) -> int | None: ...
    @property
    def event_type(self) -> str: ...
    @property
    def row_index(self) -> int: ...


# -- literals -------------------------------------------------------------------------------

_ESCAPES: Final = str.maketrans({"\\": "\\\\", "'": "''", "\0": "\\0", "\n": "\\n", "\r": "\\r", "\x1a": "\\Z"})
_UTF8_CHARSETS: Final = frozenset({"utf8mb4", "utf8mb3", "utf8", "ascii"})
"""Charsets whose text a ``SET NAMES utf8mb4`` string literal carries as it is."""
_DECIMAL: Final = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def quote_identifier(name: str) -> str:
    """```name``` with backticks doubled.

    >>> quote_identifier("a`b")
    '`a``b`'
    """
    return "`" + name.replace("`", "``") + "`"


def quote_table(table_map: TableMap) -> str:
    """```schema`.`table```."""
    return f"{quote_identifier(table_map.schema)}.{quote_identifier(table_map.table)}"


def quote_string(text: str) -> str:
    """A single-quoted string literal (backslash escapes, as the default ``sql_mode`` reads them).

    >>> print(quote_string("it's a\\\\b\\n"))
    'it''s a\\\\b\\n'
    """
    return "'" + text.translate(_ESCAPES) + "'"


def hex_literal(raw: bytes, charset: str | None = None) -> str:
    """``X'..'`` (uppercase hex), with a ``_charset`` introducer when given.

    >>> hex_literal(b"\\xe9", "latin1"), hex_literal(b"")
    ("_latin1 X'E9'", "X''")
    """
    text = f"X'{raw.hex().upper()}'"
    return f"_{charset} {text}" if charset else text


LiteralWriter = Callable[[object, Column, "str | None"], str]
"""``(value, column, text_codec) -> literal`` for a non-NULL value; ``text_codec`` is the codec
the decoder used for text of columns the file names no charset for."""


_INTEGER_BYTES: Final[dict[int, int]] = {
    ColumnType.TINY: 1,
    ColumnType.SHORT: 2,
    ColumnType.INT24: 3,
    ColumnType.LONG: 4,
    ColumnType.LONGLONG: 8,
}


def _integer(value: object, column: Column, _codec: str | None) -> str:
    if not isinstance(value, int):
        raise SqlError(f"{column.type_name} value {value!r} is not an integer")
    if value < 0 and column.unsigned is None:
        raise AmbiguousValueError(
            f"the value {value} reads as negative, but the file does not say whether the column is unsigned "
            f"(binlog_row_metadata=FULL does): it may be {value + (1 << (8 * _INTEGER_BYTES[column.type]))}"
        )
    return str(value)


def _plain_number(value: object, column: Column, _codec: str | None) -> str:
    if not isinstance(value, int):
        raise SqlError(f"{column.type_name} value {value!r} is not an integer")
    return str(value)


def _decimal(value: object, column: Column, _codec: str | None) -> str:
    if not isinstance(value, str) or _DECIMAL.fullmatch(value) is None:
        raise SqlError(f"DECIMAL value {value!r} is not decimal digits")
    return value


def _finite(value: object, column: Column) -> float:
    if not isinstance(value, float):
        raise SqlError(f"{column.type_name} value {value!r} is not a float")
    if not math.isfinite(value):
        raise NonFiniteValueError(f"{value!r} has no SQL literal (MySQL never stores it: the value is damaged)")
    return value


def _float(value: object, column: Column, _codec: str | None) -> str:
    return repr(float32_text(_finite(value, column)))


def _double(value: object, column: Column, _codec: str | None) -> str:
    return repr(_finite(value, column))


def _bit(value: object, column: Column, _codec: str | None) -> str:
    if not isinstance(value, int) or value < 0 or value >> max(column.bits, 1):
        raise SqlError(f"BIT({column.bits}) value {value!r} does not fit the column")
    return f"b'{value:0{max(column.bits, 1)}b}'"


def _temporal(value: object, column: Column, _codec: str | None) -> str:
    if not isinstance(value, str):
        raise SqlError(f"{column.type_name} value {value!r} is not text")
    return quote_string(value)


def _charset_of(column: Column) -> str | None:
    if column.collation is None:
        return None
    found = collation_info(column.collation)
    return None if found is None else found.charset


def _text(value: object, column: Column, codec: str | None) -> str:
    """CHAR/VARCHAR/TEXT/BLOB and BINARY/VARBINARY (the collation tells which)."""
    if isinstance(value, UndecodedText):
        return hex_literal(bytes(value), _charset_of(column))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hex_literal(bytes(value))
    if not isinstance(value, str):
        raise SqlError(f"{column.type_name} value {value!r} is neither text nor bytes")
    if column.collation is None:
        if codec is None:
            raise SqlError("text of a column without charset, decoded without a codec")
        return hex_literal(value.encode(codec))  # the stored bytes: a binary string keeps them
    charset = _charset_of(column)
    if charset in _UTF8_CHARSETS:
        return quote_string(value)
    text_codec = codec_for_collation(column.collation)
    if charset is None or text_codec is None:
        raise SqlError(f"text of collation {column.collation}, which this library cannot encode back")
    return hex_literal(value.encode(text_codec), charset)


def _bytes(value: object, column: Column, _codec: str | None) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hex_literal(bytes(value))
    raise SqlError(f"{column.type_name} value {value!r} is not bytes")


def _vector(value: object, column: Column, _codec: str | None) -> str:
    if not isinstance(value, tuple):
        raise SqlError(f"VECTOR value {value!r} is not a tuple of floats")
    elements = [_finite(v, column) for v in value]
    return hex_literal(struct.pack(f"<{len(elements)}f", *elements))


def _label_or_number(value: object, column: Column, _codec: str | None) -> str:
    """ENUM/SET: labels as text, or the index/bitmask when the file carries no labels."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise SqlError(f"{column.type_name} value {value!r} is neither labels nor a number")
    return quote_string(value) if isinstance(value, str) else str(value)


def _json_text(value: str) -> str:
    """A JSON text literal; refused when the text does not rebuild the document (opaque values)."""
    if isinstance(value, JsonWithOpaque):
        raise AmbiguousValueError(
            f"the JSON document {value[:200]!r} holds MySQL opaque values (DATE, TIME, DATETIME, DECIMAL or "
            "another column type stored as JSON); its text reads back as strings and doubles, not those values"
        )
    return quote_string(value)


def _json(value: object, column: Column, _codec: str | None) -> str:
    if not isinstance(value, str):
        raise SqlError(f"JSON value {value!r} is not the text of a document")
    return _json_text(value)


LITERALS: Final[dict[int, LiteralWriter]] = {
    **dict.fromkeys(_INTEGER_BYTES, _integer),
    ColumnType.YEAR: _plain_number,
    ColumnType.NEWDECIMAL: _decimal,
    ColumnType.FLOAT: _float,
    ColumnType.DOUBLE: _double,
    ColumnType.BIT: _bit,
    **dict.fromkeys(
        (
            ColumnType.DATE,
            ColumnType.NEWDATE,
            ColumnType.TIME,
            ColumnType.TIME2,
            ColumnType.DATETIME,
            ColumnType.DATETIME2,
            ColumnType.TIMESTAMP,
            ColumnType.TIMESTAMP2,
        ),
        _temporal,
    ),
    **dict.fromkeys(
        (
            ColumnType.STRING,
            ColumnType.VARCHAR,
            ColumnType.VAR_STRING,
            ColumnType.BLOB,
            ColumnType.TINY_BLOB,
            ColumnType.MEDIUM_BLOB,
            ColumnType.LONG_BLOB,
            VARCHAR_COMPRESSED,
            BLOB_COMPRESSED,
        ),
        _text,
    ),
    ColumnType.GEOMETRY: _bytes,
    ColumnType.VECTOR: _vector,
    ColumnType.ENUM: _label_or_number,
    ColumnType.SET: _label_or_number,
    ColumnType.JSON: _json,
}
"""Real column type -> writer of a non-NULL value's literal (the module doc's table)."""


def value_literal(value: object, column: Column, *, text_codec: str | None = "utf-8") -> str:
    """The literal of one value (``NULL`` for ``None``).

    >>> from binlog_core.table_map import Column
    >>> value_literal("O'Brien", Column(0, ColumnType.VARCHAR, ColumnType.VARCHAR, 80, True, collation=45))
    "'O''Brien'"
    """
    if value is None:
        return "NULL"
    if value is ABSENT:
        raise PartialImageError("the column is not in the row image")
    writer = LITERALS.get(column.type)
    if writer is None:
        raise SqlError(f"no SQL literal for column type {column.type_name}")
    return writer(value, column, text_codec)


_BYTEWISE: Final = frozenset(
    {
        ColumnType.STRING,
        ColumnType.VARCHAR,
        ColumnType.VAR_STRING,
        ColumnType.BLOB,
        ColumnType.TINY_BLOB,
        ColumnType.MEDIUM_BLOB,
        ColumnType.LONG_BLOB,
        ColumnType.GEOMETRY,
        ColumnType.VECTOR,
        VARCHAR_COMPRESSED,
        BLOB_COMPRESSED,
    }
)
"""Columns compared byte for byte when they identify a row without a key."""


def _comparand(value: object, column: Column, text_codec: str | None) -> str:
    """The literal to compare a column with: FLOAT as the double it widens to, JSON cast."""
    if column.type == ColumnType.FLOAT:
        return repr(_finite(value, column))
    if column.type == ColumnType.JSON:
        return f"CAST({value_literal(value, column, text_codec=text_codec)} AS JSON)"
    return value_literal(value, column, text_codec=text_codec)


def condition(column: Column, value: object, *, key: bool, text_codec: str | None = "utf-8") -> str:
    """One term of a WHERE: ``key`` terms (primary key columns) compare in the column's collation,
    the others NULL-safe and, for strings, byte for byte.

    >>> from binlog_core.table_map import Column
    >>> c = Column(1, ColumnType.VARCHAR, ColumnType.VARCHAR, 80, True, name="n", collation=45)
    >>> condition(c, "x", key=True), condition(c, "x", key=False), condition(c, None, key=False)
    ("`n` = 'x'", "CAST(`n` AS BINARY) <=> 'x'", '`n` IS NULL')
    """
    name = quote_identifier(_name_of(column))
    if value is None:
        return f"{name} IS NULL"
    if isinstance(value, JsonPartialUpdate):
        raise PartialImageError("the image holds a partial JSON update (the changes), not the document")
    literal = _comparand(value, column, text_codec)
    if key:
        return f"{name} = {literal}"
    if column.type in _BYTEWISE:
        if column.type == ColumnType.STRING and column.collation is None and not _fills(value, column, text_codec):
            raise AmbiguousValueError(
                f"{value!r} is shorter than the column's {column.length} bytes and the file does not say whether "
                "the column is CHAR or BINARY (BINARY pads with zero bytes): it cannot be compared exactly"
            )
        return f"CAST({name} AS BINARY) <=> {literal}"
    return f"{name} <=> {literal}"


def _fills(value: object, column: Column, text_codec: str | None) -> bool:
    """A CHAR/BINARY value of the column's full byte length (no padding question)."""
    raw = value if isinstance(value, bytes) else str(value).encode(text_codec or "utf-8")
    return len(raw) == column.length


def _name_of(column: Column) -> str:
    if column.name is None:
        raise ColumnNamesUnknownError(
            "the TABLE_MAP carries no column names (the server wrote binlog_row_metadata=MINIMAL or NO_LOG; "
            "FULL writes them) and none are known for the table from earlier in the files"
        )
    return column.name


def _json_update(name: str, update: JsonPartialUpdate) -> str:
    """``JSON_REPLACE(`j`, '$.a', CAST('1' AS JSON))``...: the diffs applied in order."""
    expression = name
    for diff in update.diffs:
        expression = _json_diff(expression, diff)
    return expression


def _json_diff(expression: str, diff: JsonDiff) -> str:
    path = quote_string(diff.path)
    if diff.operation == "REMOVE" or diff.value is None:
        return f"JSON_REMOVE({expression}, {path})"
    function = (
        "JSON_ARRAY_INSERT" if diff.operation == "INSERT" and diff.path.endswith("]") else f"JSON_{diff.operation}"
    )
    return f"{function}({expression}, {path}, CAST({_json_text(diff.value)} AS JSON))"


# -- statements -----------------------------------------------------------------------------


def _locate(exc: SqlError, change: ChangeLike, column: Column | None, side: str | None) -> SqlError:
    if column is not None:
        exc.within(f"col {column.index + 1} {column.display_name}")
    if side is not None:
        exc.message = f"{side} image: {exc.message}"
    exc.within(f"row {change.row_index}")
    exc.locate(file=change.file, offset=change.offset, inner_index=change.inner_index, event_type=change.event_type)
    return exc


def _absent(columns: Sequence[Column]) -> str:
    return ", ".join(c.display_name for c in columns)


def _image(change: ChangeLike, side: str) -> Row:
    image = change.before if side == "before" else change.after
    if image is None:
        raise _locate(SqlError(f"a {change.op} has no {side} image"), change, None, None)
    return image


def _literals(change: ChangeLike, image: Row, side: str, text_codec: str | None) -> list[tuple[Column, str]]:
    """Each column of the image with its literal (columns absent from the image left out)."""
    out: list[tuple[Column, str]] = []
    for column, value in zip(change.table_map.columns, image, strict=False):
        if value is ABSENT:
            continue
        try:
            name = quote_identifier(_name_of(column))
            if isinstance(value, JsonPartialUpdate):
                literal = _json_update(name, value)
            else:
                literal = value_literal(value, column, text_codec=text_codec)
        except SqlError as exc:
            raise _locate(exc, change, column, side) from None
        out.append((column, literal))
    return out


def _row_filter(change: ChangeLike, row: Row, side: str, text_codec: str | None, *, complete: bool) -> str:
    """``WHERE ...`` that finds the row holding ``row``: by primary key, else by every column.

    ``complete``: without a usable primary key every column must be known (else the present
    columns are used: the server logs the columns that identify the row).
    """
    table_map = change.table_map
    columns = table_map.columns
    key = table_map.primary_key
    if key and all(row[i] is not ABSENT for i in key):
        chosen = [columns[i] for i in key]
        limit = ""
    else:
        absent = [c for c, v in zip(columns, row, strict=False) if v is ABSENT]
        if complete and absent:
            reason = "the TABLE_MAP names no primary key" if not key else "the primary key is not in the image"
            raise _locate(
                PartialImageError(
                    f"{reason}, so the row is found by every column, but {_absent(absent)} "
                    f"{'is' if len(absent) == 1 else 'are'} not in the image"
                ),
                change,
                None,
                side,
            )
        chosen = [c for c, v in zip(columns, row, strict=False) if v is not ABSENT]
        limit = " LIMIT 1"
    terms: list[str] = []
    for column in chosen:
        try:
            terms.append(condition(column, row[column.index], key=not limit, text_codec=text_codec))
        except SqlError as exc:
            raise _locate(exc, change, column, side) from None
    return " WHERE " + " AND ".join(terms) + limit


def _insert(change: ChangeLike, image: Row, side: str, text_codec: str | None) -> str:
    pairs = _literals(change, image, side, text_codec)
    names = ", ".join(quote_identifier(_name_of(c)) for c, _ in pairs)
    values = ", ".join(literal for _, literal in pairs)
    return f"INSERT INTO {quote_table(change.table_map)} ({names}) VALUES ({values});"


def _update(change: ChangeLike, new: Row, side: str, where: str, text_codec: str | None) -> str:
    pairs = _literals(change, new, side, text_codec)
    assignments = ", ".join(f"{quote_identifier(_name_of(c))} = {literal}" for c, literal in pairs)
    return f"UPDATE {quote_table(change.table_map)} SET {assignments}{where};"


def _delete(change: ChangeLike, where: str) -> str:
    return f"DELETE FROM {quote_table(change.table_map)}{where};"


def _current(before: Row, after: Row) -> Row:
    """The row after an update: the after image, with the columns it leaves out unchanged."""
    return tuple(b if a is ABSENT else a for b, a in zip(before, after, strict=False))


def _complete(change: ChangeLike, image: Row, side: str, why: str) -> Row:
    """``image`` when it holds every column; else :class:`PartialImageError` naming the absent ones."""
    absent = [c for c, v in zip(change.table_map.columns, image, strict=False) if v is ABSENT]
    if absent:
        verb = "is" if len(absent) == 1 else "are"
        raise _locate(PartialImageError(f"{_absent(absent)} {verb} not in the image; {why}"), change, None, side)
    return image


_UNKNOWN_FILL: Final = "the server gave them values (their defaults) that the binlog does not hold"
_UNKNOWN_RESET: Final = (
    "nothing says they kept their values (a REPLACE the server runs as an update resets columns without logging them)"
)


def _apply_insert(change: ChangeLike, codec: str | None) -> str:
    after = _complete(change, _image(change, "after"), "after", _UNKNOWN_FILL)
    return _insert(change, after, "after", codec)


def _apply_update(change: ChangeLike, codec: str | None) -> str:
    before = _image(change, "before")
    where = _row_filter(change, before, "before", codec, complete=False)
    after = _complete(change, _image(change, "after"), "after", _UNKNOWN_RESET)
    return _update(change, after, "after", where, codec)


def _apply_delete(change: ChangeLike, codec: str | None) -> str:
    return _delete(change, _row_filter(change, _image(change, "before"), "before", codec, complete=False))


APPLY: Final[dict[str, Callable[[ChangeLike, str | None], str]]] = {
    "insert": _apply_insert,
    "update": _apply_update,
    "delete": _apply_delete,
}
"""Operation -> writer of the statement that applies the change."""


def change_statement(change: ChangeLike, *, text_codec: str | None = "utf-8") -> str:
    """The statement that applies one row change.

    The values written must all be in the image (an INSERT or UPDATE image that leaves columns
    out is refused); the row an UPDATE or DELETE changes is found by the columns the server
    logged to find it (MINIMAL: the primary key).
    """
    return APPLY[change.op](change, text_codec)


def _undo_insert(change: ChangeLike, codec: str | None) -> str:
    return _delete(change, _row_filter(change, _image(change, "after"), "after", codec, complete=True))


def _undo_delete(change: ChangeLike, codec: str | None) -> str:
    before = _complete(change, _image(change, "before"), "before", "the deleted row cannot be inserted back")
    return _insert(change, before, "before", codec)


def _undo_update(change: ChangeLike, codec: str | None) -> str:
    before = _complete(
        change, _image(change, "before"), "before", "the row cannot be set back to what it was before the update"
    )
    where = _row_filter(change, _current(before, _image(change, "after")), "after", codec, complete=True)
    return _update(change, before, "before", where, codec)


UNDO: Final[dict[str, Callable[[ChangeLike, str | None], str]]] = {
    "insert": _undo_insert,
    "update": _undo_update,
    "delete": _undo_delete,
}
"""Operation -> writer of the statement that reverts the change."""


def undo_statements(changes: Iterable[ChangeLike], *, text_codec: str | None = "utf-8") -> list[str]:
    """The statements that revert ``changes`` (given in the order they happened), newest first.

    An insert becomes ``DELETE ... WHERE <key of the after image>``, a delete ``INSERT`` of the
    before image, an update ``UPDATE ... SET <before image> WHERE <key of the after image>``.
    Raises :class:`~binlog_core.errors.PartialImageError` when an image leaves a needed value
    unknown (MINIMAL/NOBLOB images), naming the row and the columns.
    """
    ordered = list(changes)
    return [UNDO[change.op](change, text_codec) for change in reversed(ordered)]


__all__ = [
    "APPLY",
    "LITERALS",
    "ROW_SETTINGS",
    "ROW_SQL_MODE",
    "UNDO",
    "ChangeLike",
    "change_statement",
    "condition",
    "hex_literal",
    "quote_identifier",
    "quote_string",
    "quote_table",
    "undo_statements",
    "value_literal",
]
