"""MariaDB's dump tool: running ``mariadb-binlog --base64-output=decode-rows -vv``, reading back the
row changes it prints, and printing values the way it does.

With ``-vv`` the tool prints every row change of a rows event as pseudo-SQL::

    ### UPDATE `d`.`t`
    ### WHERE
    ###   @1=-1 (255) /* TINYINT meta=0 nullable=0 is_null=0 */
    ### SET
    ###   @2='a\\x00b' /* VARSTRING(40) meta=40 nullable=1 is_null=0 */

:func:`run_dump` runs the tool on one file; :func:`parse_rows` turns those lines into
:class:`LoggedRow` objects. :func:`print_value` and :func:`print_type` print a value decoded by
``binlog_core`` (and its TABLE_MAP column) the way the tool prints the stored bytes, following
``log_event_print_value`` in MariaDB's ``sql/log_event_client.cc``:

=========================  ===================================================================
integers                   signed value, then `` (unsigned)`` when it is negative
DECIMAL                    its digits; FLOAT ``%-20g``; DOUBLE ``%-.20g``
BIT, SET                   ``b'0101'``: the stored bytes, most significant bit first (SET bytes
                           in storage order, least significant first)
ENUM                       the 1-based index
YEAR                       four digits (the tool prints the zero year as 1900)
DATE                       ``'YYYY:MM:DD'``
TIME, DATETIME (+fsp)      ``'...'`` as ``SELECT`` prints them
TIMESTAMP (+fsp)           epoch seconds, then ``.`` and the fraction digits
strings, BLOBs, GEOMETRY   the stored bytes in quotes, bytes below 0x20 as ``\\xNN``
=========================  ===================================================================

The tool is looked up with :func:`tests.harness.mariadb.find_mariadb_binlog`;
:func:`require_mariadb_binlog` fails a test with install advice when it is missing, or skips it
when ``BINLOG_SKIP_MARIADB=1`` asks for that.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from binlog_core.charsets import codec_for_collation
from binlog_core.columns import DecodeOptions
from binlog_core.constants import ColumnType
from binlog_core.table_map import Column
from tests.harness.mariadb import SKIP_ENV_VAR, find_mariadb_binlog, skip_requested

DUMP_ARGS = ("--base64-output=decode-rows", "-vv")
"""Decode rows events into ``###`` pseudo-SQL, with each value's type, metadata and NULL flag."""

_ROW_HEADER_RE = re.compile(r"^### (INSERT INTO|UPDATE|DELETE FROM) `((?:[^`]|``)*)`\.`((?:[^`]|``)*)`$")
_VALUE_RE = re.compile(
    r"^###   @(\d+)=(.*?)\s*/\* ([A-Z][A-Za-z0-9_/(), ]*) meta=(\d+) nullable=(\d) is_null=(\d) \*/$"
)
_EVENT_RE = re.compile(r"\t(Write|Update|Delete)_(?:compressed_)?rows(?:_v1)?(?:_compressed)?: table id \d+")
_OPS = {"INSERT INTO": "insert", "UPDATE": "update", "DELETE FROM": "delete"}


# ------------------------------------------------------------------------------ running the tool


@dataclass(frozen=True)
class Dump:
    """One run of the tool on one file: exit status, stdout (bytes mapped 1:1 to characters), stderr."""

    returncode: int
    text: str
    errors: str


def run_dump(path: Path, mariadb_binlog: str, timeout: float = 30.0) -> Dump:
    """Run ``mariadb-binlog --base64-output=decode-rows -vv`` on one file."""
    result = subprocess.run([mariadb_binlog, *DUMP_ARGS, str(path)], capture_output=True, check=False, timeout=timeout)
    return Dump(result.returncode, result.stdout.decode("latin-1"), result.stderr.decode(errors="replace"))


def dump_file(path: Path, mariadb_binlog: str) -> str:
    """The decoded dump of one binlog file, failing when the tool does."""
    dump = run_dump(path, mariadb_binlog)
    if dump.returncode != 0:
        raise AssertionError(f"mariadb-binlog failed on {path}: {dump.errors}")
    return dump.text


def require_mariadb_binlog() -> str:
    """The tool's path; fails the calling test with install advice (or skips it, when asked) if missing."""
    found = find_mariadb_binlog()
    if found is not None:
        return found
    if skip_requested():
        pytest.skip(f"{SKIP_ENV_VAR}=1: tests that need MariaDB programs are skipped")
    pytest.fail(
        "mariadb-binlog not found. Install Debian's `mariadb-client` package (apt-get install mariadb-client), "
        f"or set {SKIP_ENV_VAR}=1 to skip the tests that need it.",
        pytrace=False,
    )


# ------------------------------------------------------------------------------ reading the dump


@dataclass
class LoggedValue:
    """One ``@N=...`` line: the printed value, the type name in the comment, and the NULL flag."""

    text: str
    type_name: str
    meta: int
    is_null: bool


@dataclass
class LoggedRow:
    """One row change as ``mariadb-binlog -vv`` prints it; images map 1-based column index to value.

    ``statement_events`` is the number of rows events of the statement the row belongs to: the dump
    tool prints the rows of all events of a statement together, after its last event header.
    """

    op: str
    schema: str
    table: str
    statement_events: int
    before: dict[int, LoggedValue] | None = None
    after: dict[int, LoggedValue] | None = None


def parse_rows(dump: str) -> list[LoggedRow]:
    """All row changes of a ``-vv`` dump, in file order."""
    rows: list[LoggedRow] = []
    events_pending = 0  # rows-event headers seen since the last printed row
    statement_events = 0
    image: dict[int, LoggedValue] | None = None
    for line in dump.split("\n"):
        if line.startswith("#") and _EVENT_RE.search(line):
            events_pending += 1
            continue
        if not line.startswith("###"):
            continue
        header = _ROW_HEADER_RE.match(line)
        if header:
            if events_pending:
                statement_events, events_pending = events_pending, 0
            rows.append(
                LoggedRow(
                    _OPS[header.group(1)],
                    header.group(2).replace("``", "`"),
                    header.group(3).replace("``", "`"),
                    statement_events,
                )
            )
            image = None
            continue
        if line == "### WHERE":
            rows[-1].before = image = {}
            continue
        if line == "### SET":
            rows[-1].after = image = {}
            continue
        value = _VALUE_RE.match(line)
        if value is None or image is None:
            raise AssertionError(f"unexpected mariadb-binlog line: {line[:200]!r}")
        image[int(value.group(1))] = LoggedValue(
            value.group(2), value.group(3), int(value.group(4)), value.group(6) == "1"
        )
    return rows


# ------------------------------------------------------------------------------ printing values


def escape_bytes(data: bytes) -> str:
    """Bytes the way ``mariadb-binlog`` quotes them: control bytes as ``\\xNN``, the rest verbatim."""
    return "".join(chr(b) if b > 0x1F else f"\\x{b:02x}" for b in data)


def quoted_text(data: bytes) -> str:
    """A string value: its bytes in single quotes (``my_b_write_quoted``)."""
    return f"'{escape_bytes(data)}'"


def integer_text(value: int, num_bytes: int) -> str:
    """An integer stored in ``num_bytes``: the signed value, and the unsigned one when negative.

    >>> integer_text(255, 1), integer_text(-1, 1), integer_text(7, 4)
    ('-1 (255)', '-1 (255)', '7')
    """
    bits = 8 * num_bytes
    unsigned = value % (1 << bits)
    signed = unsigned - (1 << bits) if unsigned >> (bits - 1) else unsigned
    return f"{signed} ({unsigned})" if signed < 0 else str(signed)


def bits_text(stored: bytes, num_bits: int) -> str:
    """``b'...'``: the last ``num_bits`` bits of the stored bytes, most significant first (``my_b_write_bit``)."""
    return "b'" + format(int.from_bytes(stored, "big"), f"0{8 * len(stored)}b")[8 * len(stored) - num_bits :] + "'"


def date_text(iso_date: str) -> str:
    """A ``YYYY-MM-DD`` date as the tool prints it: ``'YYYY:MM:DD'``."""
    return f"'{iso_date.replace('-', ':')}'"


def timestamp_text(utc: str) -> str:
    """A ``YYYY-MM-DD HH:MM:SS[.fff]`` UTC timestamp as the tool prints it: epoch seconds with the fraction."""
    whole, _, frac = utc.partition(".")
    if whole.startswith("0000-00-00"):
        seconds = 0
    else:
        seconds = int(datetime.strptime(whole, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp())
    return f"{seconds}.{frac}" if frac else str(seconds)


PRINT_OPTIONS = DecodeOptions(restore_binary_padding=False)
"""Decode with these options to print values: BINARY(n) keeps the bytes the server logged."""

_INTEGER_BYTES = {
    ColumnType.TINY: 1,
    ColumnType.SHORT: 2,
    ColumnType.INT24: 3,
    ColumnType.LONG: 4,
    ColumnType.LONGLONG: 8,
}
_BLOB_NAMES = {1: "TINYBLOB/TINYTEXT", 2: "BLOB/TEXT", 3: "MEDIUMBLOB/MEDIUMTEXT", 4: "LONGBLOB/LONGTEXT"}


def _string_bytes(column: Column, value: object) -> bytes:
    """The stored bytes of a string value: bytes as they are, text encoded back in the column's charset."""
    if isinstance(value, bytes):
        return value
    codec = codec_for_collation(column.collation, PRINT_OPTIONS.default_charset)
    if not isinstance(value, str) or codec is None:
        raise AssertionError(f"cannot print {value!r} of {column.type_name} column {column.display_name}")
    return value.encode(codec)


def _label_index(labels: tuple[str, ...] | None, value: object) -> int:
    """An ENUM value's 1-based index (0 for the empty error value)."""
    if isinstance(value, int):
        return value
    return labels.index(str(value)) + 1 if value and labels is not None else 0


def _set_mask(labels: tuple[str, ...] | None, value: object) -> int:
    """A SET value's member bitmask."""
    if isinstance(value, int):
        return value
    members = set(str(value).split(",")) if value else set()
    return sum(1 << bit for bit, label in enumerate(labels or ()) if label in members)


ValuePrinter = Callable[[Column, Any], str]
"""Prints one non-NULL decoded value of a column (values are of the column type's Python type)."""


def _print_integer(column: Column, value: Any) -> str:
    return integer_text(value, _INTEGER_BYTES[ColumnType(column.type)])


def _print_verbatim(column: Column, value: Any) -> str:
    return str(value)


def _print_quoted(column: Column, value: Any) -> str:
    return f"'{value}'"


def _print_float(column: Column, value: Any) -> str:
    return f"{value:g}"  # C's "%-20g": the dump's value ends where the padding starts


def _print_double(column: Column, value: Any) -> str:
    return f"{value:.20g}"  # C's "%-.20g"


def _print_bit(column: Column, value: Any) -> str:
    num_bytes = (column.bits + 7) // 8
    return bits_text(value.to_bytes(num_bytes, "big"), column.bits)


def _print_year(column: Column, value: Any) -> str:
    return f"{value:04d}"


def _print_date(column: Column, value: Any) -> str:
    return date_text(str(value))


def _print_timestamp(column: Column, value: Any) -> str:
    return timestamp_text(str(value))


def _print_enum(column: Column, value: Any) -> str:
    return str(_label_index(column.enum_values, value))


def _print_set(column: Column, value: Any) -> str:
    stored = _set_mask(column.set_values, value).to_bytes(column.length, "little")
    return bits_text(stored, 8 * column.length)


def _print_string(column: Column, value: Any) -> str:
    return quoted_text(_string_bytes(column, value))


VALUE_PRINTERS: dict[int, ValuePrinter] = {
    **dict.fromkeys(_INTEGER_BYTES, _print_integer),
    ColumnType.NEWDECIMAL: _print_verbatim,
    ColumnType.FLOAT: _print_float,
    ColumnType.DOUBLE: _print_double,
    ColumnType.BIT: _print_bit,
    ColumnType.YEAR: _print_year,
    ColumnType.DATE: _print_date,
    ColumnType.NEWDATE: _print_date,
    ColumnType.TIME: _print_quoted,
    ColumnType.TIME2: _print_quoted,
    ColumnType.DATETIME: _print_quoted,
    ColumnType.DATETIME2: _print_quoted,
    ColumnType.TIMESTAMP: _print_timestamp,
    ColumnType.TIMESTAMP2: _print_timestamp,
    ColumnType.ENUM: _print_enum,
    ColumnType.SET: _print_set,
    **dict.fromkeys(
        (
            ColumnType.STRING,
            ColumnType.VARCHAR,
            ColumnType.VAR_STRING,
            ColumnType.BLOB,
            ColumnType.TINY_BLOB,
            ColumnType.MEDIUM_BLOB,
            ColumnType.LONG_BLOB,
            ColumnType.GEOMETRY,
        ),
        _print_string,
    ),
}
"""Real column type -> how the tool prints a non-NULL value of it."""

TYPE_NAMES: dict[int, Callable[[Column], str]] = {
    ColumnType.TINY: lambda c: "TINYINT",
    ColumnType.SHORT: lambda c: "SHORTINT",
    ColumnType.INT24: lambda c: "MEDIUMINT",
    ColumnType.LONG: lambda c: "INT",
    ColumnType.LONGLONG: lambda c: "LONGINT",
    ColumnType.NEWDECIMAL: lambda c: f"DECIMAL({c.precision},{c.scale})",
    ColumnType.FLOAT: lambda c: "FLOAT",
    ColumnType.DOUBLE: lambda c: "DOUBLE",
    ColumnType.BIT: lambda c: f"BIT({c.bits})",
    ColumnType.YEAR: lambda c: "YEAR",
    ColumnType.DATE: lambda c: "DATE",
    ColumnType.NEWDATE: lambda c: "DATE",
    ColumnType.TIME: lambda c: "TIME",
    ColumnType.TIME2: lambda c: f"TIME({c.fsp})",
    ColumnType.DATETIME: lambda c: "DATETIME",
    ColumnType.DATETIME2: lambda c: f"DATETIME({c.fsp})",
    ColumnType.TIMESTAMP: lambda c: "TIMESTAMP",
    ColumnType.TIMESTAMP2: lambda c: f"TIMESTAMP({c.fsp})",
    ColumnType.ENUM: lambda c: "ENUM(1 byte)" if c.length == 1 else f"ENUM({c.length} bytes)",
    ColumnType.SET: lambda c: f"SET({c.length} bytes)",
    ColumnType.STRING: lambda c: f"STRING({c.length})",
    ColumnType.VARCHAR: lambda c: f"VARSTRING({c.meta})",
    ColumnType.VAR_STRING: lambda c: f"VARSTRING({c.meta})",
    **dict.fromkeys(
        (ColumnType.BLOB, ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB),
        lambda c: _BLOB_NAMES[c.pack_length],
    ),
    ColumnType.GEOMETRY: lambda c: "GEOMETRY",
}
"""Real column type -> the type name in the tool's ``/* ... */`` comment."""


def print_type(column: Column) -> str:
    """The type name the tool prints for a TABLE_MAP column (``VARSTRING(40)``, ``TIMESTAMP(3)``...)."""
    name = TYPE_NAMES.get(column.type)
    return name(column) if name is not None else f"<{column.type_name}>"


def print_value(column: Column, value: object) -> str:
    """A value decoded by ``binlog_core`` (with :data:`PRINT_OPTIONS`) as the tool prints it; NULL is ``NULL``."""
    if value is None:
        return "NULL"
    printer = VALUE_PRINTERS.get(column.type)
    if printer is None:
        return f"<no printer for {column.type_name}: {value!r}>"
    return printer(column, value)


def print_column(column: Column, value: object) -> LoggedValue:
    """One decoded value as the ``@N=...`` line the tool prints for it."""
    return LoggedValue(print_value(column, value), print_type(column), column.meta, value is None)
