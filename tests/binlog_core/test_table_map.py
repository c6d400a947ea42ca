"""TABLE_MAP per-type metadata: what each column's ``meta`` holds and what is unpacked from it."""

from __future__ import annotations

from binlog_core.constants import ChecksumAlg, ColumnType, EventType, Flavor
from binlog_core.event import FormatDescription
from binlog_core.table_map import decode_table_map

FDE = FormatDescription(
    4,
    "10.11.19-MariaDB-log",
    0,
    19,
    bytes(8 if code == EventType.TABLE_MAP else 0 for code in range(1, 41)),
    ChecksumAlg.CRC32,
    Flavor.MARIADB,
    (10, 11, 19),
)


def test_two_byte_metadata_is_read_as_the_server_reads_it() -> None:
    # `d`.`t` (price DECIMAL(10,4), flags BIT(10), note VARCHAR(40)), all nullable
    body = (
        (42).to_bytes(6, "little")
        + b"\x01\x00"
        + b"\x01d\x00\x01t\x00"
        + bytes([3, ColumnType.NEWDECIMAL, ColumnType.BIT, ColumnType.VARCHAR])
        + bytes([6, 10, 4, 2, 1, 40, 0])  # precision, scale | bits % 8, bits / 8 | max length LE
        + b"\x07"
    )
    price, flags, note = decode_table_map(body, FDE).columns
    # the dump tool prints these, e.g. "DECIMAL(10,4) meta=2564": precision high, scale low
    assert (price.meta, price.precision, price.scale) == (10 << 8 | 4, 10, 4)
    assert (flags.meta, flags.bits) == (1 << 8 | 2, 10)
    assert (note.meta, note.length) == (40, 40)
