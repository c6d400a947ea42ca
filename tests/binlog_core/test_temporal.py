"""TIME2, DATETIME2 and TIMESTAMP2 values: their fraction at every precision, valid and out of range.

The byte layouts are MySQL's (``mysys/my_time.cc``: ``my_datetime_packed_to_binary``,
``my_time_packed_to_binary``, ``my_timestamp_to_binary``; MariaDB ``sql/compat56.cc`` is the
same): the values below are built from them, with the edge fractions a server can write and
the ones it cannot.  The last test damages a real fixture row.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from binlog_core import temporal
from binlog_core.errors import MalformedError
from tests.binlog_core.real_events import file_bytes
from tests.binlog_core.test_rows import FULL_1, _decoded_at, _row_starts, _with_crc

Render = Callable[[bytes, int], str]


def _datetime2(year: int, month: int, day: int, hour: int, minute: int, second: int) -> bytes:
    """The 5 integer bytes: ``(((year * 13 + month) << 5 | day) << 17 | hms) + 0x8000000000``, big-endian."""
    ymd = (year * 13 + month) << 5 | day
    hms = hour << 12 | minute << 6 | second
    return ((ymd << 17 | hms) + temporal.DATETIMEF_INT_OFS).to_bytes(5, "big")


def _time2(hour: int, minute: int, second: int) -> bytes:
    """The 3 integer bytes of a non-negative TIME2: ``hms + 0x800000``, big-endian."""
    return ((hour << 12 | minute << 6 | second) + temporal.TIMEF_INT_OFS).to_bytes(3, "big")


LEAP_END = _datetime2(2024, 2, 29, 23, 59, 59)
LEAP_END_2000 = (951868799).to_bytes(4, "big")
"""TIMESTAMP2 seconds of 2000-02-29 23:59:59 UTC."""
TIME_MAX = _time2(838, 59, 59)


def _renderers(type_name: str) -> list[Render]:
    """Every way a value is rendered: the general reader, and the per-precision converter if any."""
    text = {"DATETIME2": temporal.datetime2_text, "TIMESTAMP2": temporal.timestamp2_text}.get(
        type_name, temporal.time2_text
    )
    out: list[Render] = [lambda raw, fsp: text(b"\xaa" + raw, 1, fsp)]  # at an offset, as in a row
    if type_name == "DATETIME2":
        out.append(lambda raw, fsp: temporal.datetime2_converter(fsp)(raw))
    if type_name == "TIMESTAMP2":
        out.append(lambda raw, fsp: temporal.timestamp2_converter(fsp)(raw))
    return out


VALID = [
    # DATETIME2: 1 byte for fsp 1-2 (hundredths), 2 bytes for 3-4 (ten-thousandths), 3 for 5-6 (us)
    ("DATETIME2", 0, LEAP_END, "2024-02-29 23:59:59"),
    ("DATETIME2", 1, LEAP_END + bytes.fromhex("00"), "2024-02-29 23:59:59.0"),
    ("DATETIME2", 1, LEAP_END + bytes.fromhex("5a"), "2024-02-29 23:59:59.9"),
    ("DATETIME2", 1, LEAP_END + bytes.fromhex("63"), "2024-02-29 23:59:59.9"),  # digits past fsp cut
    ("DATETIME2", 2, LEAP_END + bytes.fromhex("01"), "2024-02-29 23:59:59.01"),
    ("DATETIME2", 2, LEAP_END + bytes.fromhex("63"), "2024-02-29 23:59:59.99"),
    ("DATETIME2", 3, LEAP_END + bytes.fromhex("000a"), "2024-02-29 23:59:59.001"),
    ("DATETIME2", 3, LEAP_END + bytes.fromhex("270f"), "2024-02-29 23:59:59.999"),
    ("DATETIME2", 4, LEAP_END + bytes.fromhex("0001"), "2024-02-29 23:59:59.0001"),
    ("DATETIME2", 4, LEAP_END + bytes.fromhex("270f"), "2024-02-29 23:59:59.9999"),
    ("DATETIME2", 5, LEAP_END + bytes.fromhex("00000a"), "2024-02-29 23:59:59.00001"),
    ("DATETIME2", 5, LEAP_END + bytes.fromhex("0f423f"), "2024-02-29 23:59:59.99999"),
    ("DATETIME2", 6, LEAP_END + bytes.fromhex("000001"), "2024-02-29 23:59:59.000001"),
    ("DATETIME2", 6, LEAP_END + bytes.fromhex("0f423f"), "2024-02-29 23:59:59.999999"),
    ("DATETIME2", 6, _datetime2(0, 0, 0, 0, 0, 0) + bytes(3), "0000-00-00 00:00:00.000000"),
    # TIMESTAMP2: seconds u32 big-endian, then the same fraction bytes
    ("TIMESTAMP2", 0, LEAP_END_2000, "2000-02-29 23:59:59"),
    ("TIMESTAMP2", 1, LEAP_END_2000 + bytes.fromhex("5a"), "2000-02-29 23:59:59.9"),
    ("TIMESTAMP2", 2, LEAP_END_2000 + bytes.fromhex("00"), "2000-02-29 23:59:59.00"),
    ("TIMESTAMP2", 2, LEAP_END_2000 + bytes.fromhex("63"), "2000-02-29 23:59:59.99"),
    ("TIMESTAMP2", 3, LEAP_END_2000 + bytes.fromhex("270f"), "2000-02-29 23:59:59.999"),
    ("TIMESTAMP2", 4, LEAP_END_2000 + bytes.fromhex("270f"), "2000-02-29 23:59:59.9999"),
    ("TIMESTAMP2", 5, LEAP_END_2000 + bytes.fromhex("0f423f"), "2000-02-29 23:59:59.99999"),
    ("TIMESTAMP2", 6, LEAP_END_2000 + bytes.fromhex("0f423f"), "2000-02-29 23:59:59.999999"),
    ("TIMESTAMP2", 6, LEAP_END_2000 + bytes.fromhex("000001"), "2000-02-29 23:59:59.000001"),
    ("TIMESTAMP2", 6, bytes(7), "0000-00-00 00:00:00.000000"),
    # TIME2: non-negative values store the fraction as it is ...
    ("TIME2", 0, TIME_MAX, "838:59:59"),
    ("TIME2", 1, TIME_MAX + bytes.fromhex("5a"), "838:59:59.9"),
    ("TIME2", 2, TIME_MAX + bytes.fromhex("63"), "838:59:59.99"),
    ("TIME2", 3, TIME_MAX + bytes.fromhex("270f"), "838:59:59.999"),
    ("TIME2", 4, TIME_MAX + bytes.fromhex("270f"), "838:59:59.9999"),
    ("TIME2", 5, TIME_MAX + bytes.fromhex("0f423f"), "838:59:59.99999"),
    ("TIME2", 6, TIME_MAX + bytes.fromhex("0f423f"), "838:59:59.999999"),
    # ... negative ones borrow it (the server's own table, my_time_packed_from_binary)
    ("TIME2", 2, bytes.fromhex("7fffffff"), "-00:00:00.01"),
    ("TIME2", 2, bytes.fromhex("7fffff9d"), "-00:00:00.99"),
    ("TIME2", 2, bytes.fromhex("7fffff00"), "-00:00:01.00"),
    ("TIME2", 2, bytes.fromhex("7ffffeff"), "-00:00:01.01"),
    ("TIME2", 2, bytes.fromhex("7ffffef6"), "-00:00:01.10"),
    ("TIME2", 4, bytes.fromhex("7fffffd8f1"), "-00:00:00.9999"),  # 0x10000 - 0xd8f1 = 9999
    ("TIME2", 4, bytes.fromhex("7fffffffff"), "-00:00:00.0001"),
    ("TIME2", 6, (temporal.TIMEF_OFS - 1).to_bytes(6, "big"), "-00:00:00.000001"),
    ("TIME2", 6, (temporal.TIMEF_OFS - 999999).to_bytes(6, "big"), "-00:00:00.999999"),
    ("TIME2", 6, (temporal.TIMEF_OFS + 999999).to_bytes(6, "big"), "00:00:00.999999"),
]


@pytest.mark.parametrize(
    ("type_name", "fsp", "raw", "text"), VALID, ids=[f"{t}({f})-{r.hex()}" for t, f, r, _ in VALID]
)
def test_edge_fractions_render_as_select_prints_them(type_name: str, fsp: int, raw: bytes, text: str) -> None:
    for render in _renderers(type_name):
        assert render(raw, fsp) == text


INVALID = [
    # one second or more, or what the server would read as negative, at every precision
    *[("DATETIME2", fsp, LEAP_END + bytes.fromhex(frac)) for fsp in (1, 2) for frac in ("64", "7f", "80", "ff")],
    *[
        ("DATETIME2", fsp, LEAP_END + bytes.fromhex(frac))
        for fsp in (3, 4)
        for frac in ("2710", "7fff", "8000", "ffff")
    ],
    *[
        ("DATETIME2", fsp, LEAP_END + bytes.fromhex(frac))
        for fsp in (5, 6)
        for frac in ("0f4240", "7fffff", "800000", "ffffff")
    ],
    *[("TIMESTAMP2", fsp, LEAP_END_2000 + bytes.fromhex(frac)) for fsp in (1, 2) for frac in ("64", "7f", "80", "ff")],
    *[
        ("TIMESTAMP2", fsp, LEAP_END_2000 + bytes.fromhex(frac))
        for fsp in (3, 4)
        for frac in ("2710", "7fff", "8000", "ffff")
    ],
    *[
        ("TIMESTAMP2", fsp, LEAP_END_2000 + bytes.fromhex(frac))
        for fsp in (5, 6)
        for frac in ("0f4240", "7fffff", "800000", "ffffff")
    ],
    ("TIMESTAMP2", 6, bytes(4) + bytes.fromhex("ffffff")),  # not the zero timestamp either
    # TIME2, non-negative: 100 hundredths, 10000 ten-thousandths, 1000000 us and above
    *[("TIME2", fsp, TIME_MAX + bytes.fromhex(frac)) for fsp in (1, 2) for frac in ("64", "7f", "ff")],
    *[("TIME2", fsp, TIME_MAX + bytes.fromhex(frac)) for fsp in (3, 4) for frac in ("2710", "ffff")],
    *[("TIME2", fsp, TIME_MAX + bytes.fromhex(frac)) for fsp in (5, 6) for frac in ("0f4240", "ffffff")],
    # TIME2, negative: a borrowed fraction of a second or more (0x100 - 0x9c = 100 hundredths)
    ("TIME2", 2, bytes.fromhex("7fffff9c")),
    ("TIME2", 1, bytes.fromhex("7fffff01")),
    ("TIME2", 4, bytes.fromhex("7fffffd8f0")),  # 0x10000 - 0xd8f0 = 10000
    ("TIME2", 6, (temporal.TIMEF_OFS - 1000000).to_bytes(6, "big")),
    ("TIME2", 6, (temporal.TIMEF_OFS + 1000000).to_bytes(6, "big")),
]


INTEGER_BYTES = {"DATETIME2": 5, "TIMESTAMP2": 4, "TIME2": 3}
RANGES = {1: "0..99 hundredths", 2: "0..99 hundredths", 3: "0..9999 ten-thousandths", 4: "0..9999 ten-thousandths"}
RANGES |= {5: "0..999999 millionths", 6: "0..999999 millionths"}


@pytest.mark.parametrize(("type_name", "fsp", "raw"), INVALID, ids=[f"{t}({f})-{r.hex()}" for t, f, r in INVALID])
def test_fractions_out_of_range_are_malformed(type_name: str, fsp: int, raw: bytes) -> None:
    for render in _renderers(type_name):
        with pytest.raises(MalformedError) as caught:
            render(raw, fsp)
        stored = raw[INTEGER_BYTES[type_name] :].hex()
        expected = f"{type_name}({fsp}) fraction {stored} is out of range: {RANGES[fsp]} of a second"
        assert caught.value.message == expected


def test_out_of_range_messages_name_the_bytes_and_the_range() -> None:
    with pytest.raises(MalformedError) as caught:
        temporal.datetime2_converter(2)(LEAP_END + b"\x7f")
    assert caught.value.message == "DATETIME2(2) fraction 7f is out of range: 0..99 hundredths of a second"
    with pytest.raises(MalformedError) as caught:
        temporal.timestamp2_text(LEAP_END_2000 + b"\xff\xff\xff", 0, 6)
    assert caught.value.message == "TIMESTAMP2(6) fraction ffffff is out of range: 0..999999 millionths of a second"


TEMPORAL_WRITE = 18603
"""full/mysql-bin.000001: WRITE_ROWS_V1 of `t_temporal` (id, dt DATE, t0..t6 TIME(n), dtm0..dtm6
DATETIME(n), ts0..ts6 TIMESTAMP(n), d_nn DATE, ts_auto TIMESTAMP(3), dtm_auto DATETIME) with 7 rows."""


def test_a_real_row_with_a_damaged_fraction_is_malformed_naming_its_column() -> None:
    data = bytearray(file_bytes(FULL_1))
    starts = _row_starts(bytes(data), TEMPORAL_WRITE)
    # row 1 ('9999-12-31 23:59:59.99' in dtm2): null bitmap 4 bytes, id 4, dt 3, t0..t6 3+4+4+5+5+6+6,
    # dtm0 5, dtm1 6, then dtm2's 5 integer bytes and its fraction byte
    at = starts[1] + 4 + 4 + 3 + 33 + 5 + 6 + 5
    assert data[at] == 99
    data[at] = 0x7F
    _with_crc(data, TEMPORAL_WRITE)
    [item] = _decoded_at(bytes(data), FULL_1.name, (TEMPORAL_WRITE,))
    assert [change.after[11] for change in item.rows if change.after is not None] == ["0000-00-00 00:00:00.00"]
    [problem] = item.problems
    assert (problem.code, problem.offset, problem.path, problem.message) == (
        "MALFORMED",
        TEMPORAL_WRITE,
        ("row 1", "col 12 dtm2"),
        "DATETIME2(2) fraction 7f is out of range: 0..99 hundredths of a second",
    )
