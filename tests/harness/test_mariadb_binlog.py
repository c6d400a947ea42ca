"""Reading ``mariadb-binlog -vv`` dumps, and printing decoded values the way the tool prints them."""

from __future__ import annotations

import struct
from typing import Any

from binlog_core.constants import ColumnType
from binlog_core.rows import UndecodedText
from binlog_core.table_map import Column
from tests.harness.mariadb_binlog import LoggedValue, escape_bytes, parse_rows, print_column

DUMP = """\
#261122  8:22:54 server id 1  end_log_pos 2441 CRC32 0x51451bca \tTable_map: `d`.`b` mapped to number 22
#261122  8:22:54 server id 1  end_log_pos 2487 CRC32 0xa285e64a \tDelete_rows: table id 22
#261122  8:22:54 server id 1  end_log_pos 2533 CRC32 0x7c2c4102 \tWrite_rows: table id 22 flags: STMT_END_F
### DELETE FROM `d`.`b`
### WHERE
###   @1=1 /* INT meta=0 nullable=0 is_null=0 */
###   @2='a /* b' /* VARSTRING(40) meta=40 nullable=1 is_null=0 */
### INSERT INTO `d`.`b`
### SET
###   @1=1 /* INT meta=0 nullable=0 is_null=0 */
###   @2=NULL /* VARSTRING(40) meta=40 nullable=1 is_null=1 */
#261122  8:22:54 server id 1  end_log_pos 2564 CRC32 0x29090957 \tXid = 16
#261122  8:22:54 server id 1  end_log_pos 2702 CRC32 0xbc6bd6bf \tUpdate_compressed_rows: table id 22 flags: STMT_END_F
### UPDATE `d`.`b`
### WHERE
###   @1=-1 (255) /* TINYINT meta=0 nullable=0 is_null=0 */
### SET
###   @2='x' /* VARSTRING(40) meta=40 nullable=1 is_null=0 */
"""


def test_dump_rows_keep_order_images_and_statement_event_counts() -> None:
    rows = parse_rows(DUMP)
    assert [(r.op, r.schema, r.table, r.statement_events) for r in rows] == [
        ("delete", "d", "b", 2),
        ("insert", "d", "b", 2),
        ("update", "d", "b", 1),
    ]
    assert rows[0].after is None and rows[1].before is None
    assert rows[0].before is not None and rows[0].before[2].text == "'a /* b'"
    assert rows[1].after is not None and rows[1].after[2].is_null
    assert rows[2].before is not None and rows[2].before[1].text == "-1 (255)"
    assert rows[2].after is not None and sorted(rows[2].after) == [2]


def test_bytes_are_quoted_like_mariadb_binlog() -> None:
    assert escape_bytes(b"a\x00\x1f '\\\xff") == "a\\x00\\x1f '\\\xff"


def column(column_type: int, meta: int = 0, **details: Any) -> Column:
    wire_type = ColumnType.STRING if column_type in (ColumnType.ENUM, ColumnType.SET) else column_type
    return Column(0, column_type, wire_type, meta, True, **details)


FLOAT_TENTH = struct.unpack("<f", struct.pack("<f", 0.1))[0]

# (column, decoded value, what the tool prints for the stored bytes: value, type, meta, NULL flag)
PRINTED = [
    (column(ColumnType.TINY, unsigned=True), 255, ("-1 (255)", "TINYINT", 0, False)),
    (column(ColumnType.TINY), -1, ("-1 (255)", "TINYINT", 0, False)),
    (column(ColumnType.LONGLONG), -1, ("-1 (18446744073709551615)", "LONGINT", 0, False)),
    (column(ColumnType.INT24, unsigned=True), 7, ("7", "MEDIUMINT", 0, False)),
    (
        column(ColumnType.NEWDECIMAL, 30 << 8 | 5, precision=30, scale=5),
        "-10.55000",
        ("-10.55000", "DECIMAL(30,5)", 7685, False),
    ),
    (column(ColumnType.FLOAT, 4, pack_length=4), 1.0, ("1", "FLOAT", 4, False)),
    (column(ColumnType.FLOAT, 4, pack_length=4), FLOAT_TENTH, ("0.1", "FLOAT", 4, False)),
    (column(ColumnType.DOUBLE, 8, pack_length=8), 0.1, ("0.10000000000000000555", "DOUBLE", 8, False)),
    (column(ColumnType.BIT, 3, bits=3), 4, ("b'100'", "BIT(3)", 3, False)),
    (column(ColumnType.BIT, 256, bits=8), 32, ("b'00100000'", "BIT(8)", 256, False)),
    (
        column(ColumnType.SET, 0xF801, length=1, set_values=("a", "b")),
        "a,b",
        ("b'00000011'", "SET(1 bytes)", 63489, False),
    ),
    (column(ColumnType.SET, 0xF802, length=2), 0x101, ("b'0000000100000001'", "SET(2 bytes)", 63490, False)),
    (column(ColumnType.ENUM, 0xF701, length=1, enum_values=("a", "b")), "b", ("2", "ENUM(1 byte)", 63233, False)),
    (column(ColumnType.ENUM, 0xF701, length=1, enum_values=("a", "b")), "", ("0", "ENUM(1 byte)", 63233, False)),
    (column(ColumnType.YEAR), 2006, ("2006", "YEAR", 0, False)),
    (column(ColumnType.DATE), "1990-08-01", ("'1990:08:01'", "DATE", 0, False)),
    (column(ColumnType.TIME2, 1, fsp=1), "-838:59:59.0", ("'-838:59:59.0'", "TIME(1)", 1, False)),
    (column(ColumnType.DATETIME), "2006-02-15 04:00:00", ("'2006-02-15 04:00:00'", "DATETIME", 0, False)),
    (column(ColumnType.TIMESTAMP2), "2018-05-04 03:25:57", ("1525404357", "TIMESTAMP(0)", 0, False)),
    (column(ColumnType.TIMESTAMP2, 3, fsp=3), "2038-01-19 03:14:07.999", ("2147483647.999", "TIMESTAMP(3)", 3, False)),
    (column(ColumnType.TIMESTAMP), "0000-00-00 00:00:00", ("0", "TIMESTAMP", 0, False)),
    (
        column(ColumnType.STRING, 0xFE0C, length=12, collation=8),
        "café'\\",
        ("'caf\xe9'\\'", "STRING(12)", 65036, False),
    ),
    (
        column(ColumnType.STRING, 0xFE04, length=4, collation=63),
        b"a\x00\n",
        ("'a\\x00\\x0a'", "STRING(4)", 65028, False),
    ),
    (
        column(ColumnType.VARCHAR, 40, length=40, collation=45),
        UndecodedText(b"\xff"),
        ("'\xff'", "VARSTRING(40)", 40, False),
    ),
    (column(ColumnType.VARCHAR, 40, length=40), "€", ("'\xe2\x82\xac'", "VARSTRING(40)", 40, False)),
    (column(ColumnType.BLOB, 2, pack_length=2), None, ("NULL", "BLOB/TEXT", 2, True)),
    (
        column(ColumnType.GEOMETRY, 4, pack_length=4),
        b"\x00\x00\x00\x00\x01",
        ("'\\x00\\x00\\x00\\x00\\x01'", "GEOMETRY", 4, False),
    ),
]


def test_decoded_values_print_as_mariadb_binlog_prints_their_stored_bytes() -> None:
    printed = [print_column(col, value) for col, value, _ in PRINTED]
    assert printed == [LoggedValue(*expected) for _, _, expected in PRINTED]
