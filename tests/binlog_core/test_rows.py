"""Row images: what rows events decode to, and how framing that contradicts itself, a column the
table plan cannot decode and a damaged row are reported (never a loop, an index past the end, or
good rows thrown away)."""

from __future__ import annotations

import dataclasses
import zlib
from pathlib import Path

import pytest

from binlog_core.columns import ABSENT, DecodeOptions, codec_for
from binlog_core.constants import ChecksumAlg, ColumnType, EventType, Flavor
from binlog_core.decoder import BinlogDecoder, DecodedEvent, decode_file
from binlog_core.errors import BinlogError, UnsupportedError
from binlog_core.event import FormatDescription
from binlog_core.framing import open_events
from binlog_core.json_binary import JsonDiff
from binlog_core.rows import (
    JsonPartialUpdate,
    RowPair,
    RowsEvent,
    TablePlan,
    UndecodedText,
    decode_rows,
    decode_rows_header,
)
from binlog_core.table_map import OptionalField, decode_table_map
from tests.binlog_core.real_events import decode_bytes, file_bytes, time_limit
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path

FULL_IMAGES = sorted((FIXTURES / "full").glob("mysql-bin.[0-9]*"))
WRITE_ROWS_V0 = "mariadb-test-data/suite/binlog/std_data/bug32407.001"
"""MySQL 5.1.15: pre-GA WRITE_ROWS_V0 events."""
JSON_8022 = "rust_mysql_common/json.binlog.000001"
"""MySQL 8.0.22: JSON rows and PARTIAL_UPDATE_ROWS."""


def first_rows_event(paths: list[Path], type_name: str) -> tuple[RowsEvent, TablePlan]:
    """The first rows event of ``type_name`` in ``paths`` that holds rows, with the plan of its TABLE_MAP."""
    for path in paths:
        decoder = BinlogDecoder()
        for event in open_events(path):
            in_force = dict(decoder.in_force)
            decoded = decoder.decode(event)
            body = decoded.body
            if event.type_name == type_name and isinstance(body, RowsEvent) and decoded.rows:
                return body, in_force[body.table_id].plan
    raise AssertionError(f"no {type_name} event with rows in {paths}")


@pytest.mark.parametrize("type_name", ["WRITE_ROWS_V1", "UPDATE_ROWS_V1", "DELETE_ROWS_V1"])
def test_row_bytes_behind_present_bitmaps_that_name_no_column_are_malformed(type_name: str) -> None:
    event, plan = first_rows_event(FULL_IMAGES, type_name)
    none = bytes(len(event.present_before))
    nothing_present = dataclasses.replace(event, present_before=none, present_after=none)
    problems: list[BinlogError] = []
    with time_limit(5):
        assert decode_rows(nothing_present, plan, problems) == []
    [problem] = problems
    assert problem.code == "MALFORMED"
    assert "bitmaps name no column" in problem.message


@pytest.mark.corpus
def test_a_pre_ga_rows_event_naming_more_columns_than_its_table_map_is_malformed() -> None:
    event, plan = first_rows_event([corpus_path(WRITE_ROWS_V0)], "WRITE_ROWS_V0")
    too_many = dataclasses.replace(event, num_columns=len(plan.table_map.columns) + 9)
    problems: list[BinlogError] = []
    assert decode_rows(too_many, plan, problems) == []
    [problem] = problems
    assert problem.code == "MALFORMED"
    assert "columns, its TABLE_MAP" in problem.message


# --- PARTIAL_UPDATE_ROWS: partial bits cover every JSON column of the table ----------------------
#
# No MySQL server is available to write these, and the one real file with partial updates
# (rust_mysql_common/json.binlog.000001) has a single JSON column, present in every after image,
# where both readings of the bitmap agree.  The events are built from MySQL's documented layout:
# TABLE_MAP (libs/mysql/binlog/event/rows_event.h, Table_map_event) and PARTIAL_UPDATE_ROWS as
# sql/log_event.cc Rows_log_event::print_verbose_one_row reads it -- after the before image,
# value_options (packed), then partial_bits with one bit per JSON column of the table
# (`value += (td->json_column_count() + 7) / 8`), then the after image:
# https://github.com/mysql/mysql-server/blob/trunk/sql/log_event.cc

MYSQL_8022 = FormatDescription(
    4,
    "8.0.22",
    0,
    19,
    bytes(
        8 if code == EventType.TABLE_MAP else 10 if EventType.WRITE_ROWS <= code <= EventType.PARTIAL_UPDATE_ROWS else 0
        for code in range(1, 42)
    ),
    ChecksumAlg.CRC32,
    Flavor.MYSQL,
    (8, 0, 22),
)

AGE_25 = bytes([0x00]) + bytes.fromhex("01000e000b000300051900") + b"age"
"""MySQL binary JSON ``{"age": 25}``: small object, 1 member, 14 bytes; key "age" at 11; value int16 25 inline."""

REPLACE_AGE_26 = bytes([0]) + bytes([5]) + b"$.age" + bytes([3]) + bytes([0x05]) + (26).to_bytes(2, "little")
"""A diff vector of one entry: REPLACE (0), path ``$.age``, value int16 26 (``Json_diff_vector::write_binary``)."""


def _json_table_map(table_id: int, num_json: int) -> bytes:
    """TABLE_MAP of `d`.`t` (id INT, j1 JSON, ..., jN JSON) with column names."""
    names = ["id"] + [f"j{i}" for i in range(1, num_json + 1)]
    num_columns = len(names)
    name_field = b"".join(bytes([len(n)]) + n.encode() for n in names)
    return (
        table_id.to_bytes(6, "little")
        + b"\x01\x00"
        + b"\x01d\x00\x01t\x00"
        + bytes([num_columns, ColumnType.LONG, *[ColumnType.JSON] * num_json])
        + bytes([num_json, *[4] * num_json])  # JSON metadata: a 4-byte length prefix
        + bytes((num_columns + 7) // 8)  # null bitmap (no nullable column)
        + bytes([OptionalField.COLUMN_NAME, len(name_field)])
        + name_field
    )


def _bitmap(columns: set[int], num_columns: int) -> bytes:
    """A columns-present bitmap, least significant bit first."""
    bits = sum(1 << i for i in columns)
    return bits.to_bytes((num_columns + 7) // 8, "little")


def _partial_update_rows(table_id: int, num_columns: int, before: set[int], after: set[int], row: bytes) -> bytes:
    """PARTIAL_UPDATE_ROWS body: post-header (table_id u48, flags STMT_END, extra length 2), bitmaps, one row."""
    return (
        table_id.to_bytes(6, "little")
        + b"\x01\x00"
        + b"\x02\x00"
        + bytes([num_columns])
        + _bitmap(before, num_columns)
        + _bitmap(after, num_columns)
        + row
    )


def _json_value(raw: bytes) -> bytes:
    return len(raw).to_bytes(4, "little") + raw


def _decode_partial_rows(map_body: bytes, rows_body: bytes) -> tuple[list[RowPair], list[BinlogError]]:
    plan = TablePlan(decode_table_map(map_body, MYSQL_8022), DecodeOptions(), MYSQL_8022)
    header = decode_rows_header(rows_body, EventType.PARTIAL_UPDATE_ROWS, MYSQL_8022)
    problems: list[BinlogError] = []
    return decode_rows(header, plan, problems), problems


def test_partial_update_bits_count_json_columns_missing_from_the_after_image() -> None:
    # UPDATE t SET j2 = JSON_REPLACE(j2, '$.age', 26) WHERE id = 1, MINIMAL after image {id, j2}:
    # j2 is the table's second JSON column, so its partial bit is bit 1 although j1 is not in the image
    row = (
        b"\x00" + (1).to_bytes(4, "little") + _json_value(AGE_25) + _json_value(AGE_25)  # before: id, j1, j2
        + b"\x01"  # value_options: PARTIAL_JSON_UPDATES
        + b"\x02"  # partial_bits: j1 no, j2 yes
        + b"\x00" + (1).to_bytes(4, "little") + _json_value(REPLACE_AGE_26)  # after: id, j2 (a diff)
    )  # fmt: skip
    rows, problems = _decode_partial_rows(_json_table_map(7, 2), _partial_update_rows(7, 3, {0, 1, 2}, {0, 2}, row))
    assert problems == []
    assert rows == [
        (
            (1, '{"age": 25}', '{"age": 25}'),
            (1, ABSENT, JsonPartialUpdate((JsonDiff("REPLACE", "$.age", "26"),))),
        )
    ]


def test_partial_update_bits_of_nine_json_columns_take_two_bytes() -> None:
    # a table with 9 JSON columns has 2 bytes of partial bits even when the after image holds one
    # of them: j9 (bit 8, the first bit of the second byte) holds a diff
    row = (
        b"\x00" + (5).to_bytes(4, "little")  # before: id
        + b"\x01"  # value_options: PARTIAL_JSON_UPDATES
        + b"\x00\x01"  # partial_bits: j9 only
        + b"\x00" + (5).to_bytes(4, "little") + _json_value(REPLACE_AGE_26)  # after: id, j9
    )  # fmt: skip
    rows, problems = _decode_partial_rows(_json_table_map(8, 9), _partial_update_rows(8, 10, {0}, {0, 9}, row))
    assert problems == []
    diff = JsonPartialUpdate((JsonDiff("REPLACE", "$.age", "26"),))
    assert rows == [((5, *[ABSENT] * 9), (5, *[ABSENT] * 8, diff))]


def test_partial_update_without_partial_json_option_has_no_partial_bits() -> None:
    # value_options 0: no partial_bits follow, the after image holds whole documents
    row = (
        b"\x00" + (1).to_bytes(4, "little")  # before: id
        + b"\x00"  # value_options: none
        + b"\x00" + (1).to_bytes(4, "little") + _json_value(AGE_25)  # after: id, j2
    )  # fmt: skip
    rows, problems = _decode_partial_rows(_json_table_map(9, 2), _partial_update_rows(9, 3, {0}, {0, 2}, row))
    assert problems == []
    assert rows == [((1, ABSENT, ABSENT), (1, ABSENT, '{"age": 25}'))]


@pytest.mark.corpus
def test_real_partial_updates_decode_to_their_diffs() -> None:
    # MySQL 8.0.22, binlog_row_value_options=PARTIAL_JSON: one JSON column, present in each after image
    changes = [
        change
        for item in decode_file(corpus_path(JSON_8022))
        for change in item.rows
        if item.event.type_name == "PARTIAL_UPDATE_ROWS"
    ]
    assert [(change.before, change.after) for change in changes] == [
        (
            (key, ABSENT, ABSENT, ABSENT),
            (ABSENT, JsonPartialUpdate((JsonDiff("REPLACE", "$.age", str(age)),)), name, age),
        )
        for key, (name, age) in enumerate([("Joe", 26), ("Sue", 34), ("Pete", 42)] * 2, start=1)
    ]


# --- errors a table plan keeps: raised afresh for each row that meets them ------------------------

FULL_1 = FIXTURES / "full" / "mysql-bin.000001"
TEMPORAL_MAPS = (18376, 19803)
"""The two TABLE_MAPs of `t_temporal` (id INT, dt DATE, t0 TIME(0), ... ) in full/mysql-bin.000001 ..."""
TEMPORAL_WRITES = (18603, 20030)
"""... and the WRITE_ROWS_V1 event after each (7 rows, then 1)."""


def _with_crc(data: bytearray, offset: int) -> None:
    """Store the CRC32 the server computes over an (altered) event's header and body."""
    size = int.from_bytes(data[offset + 9 : offset + 13], "little")
    end = offset + size
    data[end - 4 : end] = zlib.crc32(bytes(data[offset : end - 4])).to_bytes(4, "little")


def _map_fields(data: bytes | bytearray, offset: int) -> tuple[int, int]:
    """Where a TABLE_MAP's column types and its per-column metadata start (fewer than 251 columns)."""
    pos = offset + 19 + 8  # header, table_id u48, flags u16
    pos += 1 + data[pos] + 1  # schema
    pos += 1 + data[pos] + 1  # table
    num_columns = data[pos]
    types = pos + 1
    return types, types + num_columns + 1  # after the types, the metadata length (1 byte here)


def _decoded_at(data: bytes, name: str, offsets: tuple[int, ...]) -> list[DecodedEvent]:
    return [item for item in decode_bytes(data, name) if item.event.offset in offsets]


@pytest.mark.parametrize(
    ("patch", "code", "step", "message"),
    [
        ("types", "UNSUPPORTED", "col 1 id", "column type DECIMAL (0) in a row image"),
        ("fsp", "MALFORMED", "col 26 dtm_auto", "fractional-second precision 7 > 6"),
    ],
)
def test_a_column_the_plan_cannot_decode_is_reported_on_each_rows_event_with_its_own_place(
    patch: str, code: str, step: str, message: str
) -> None:
    # both TABLE_MAPs altered alike: the first column's type becomes 0 (the pre-5.0 DECIMAL, which
    # no row image holds), or the last column, DATETIME(0) dtm_auto (not NULL in either event),
    # gets precision 7
    data = bytearray(file_bytes(FULL_1))
    for offset in TEMPORAL_MAPS:
        types, metadata = _map_fields(data, offset)
        # 26 columns: id INT, dt DATE, 7 TIME2, 7 DATETIME2, 7 TIMESTAMP2, d_nn DATE, ts_auto
        # TIMESTAMP2, dtm_auto DATETIME2; metadata: one precision byte per TIME2/DATETIME2/TIMESTAMP2
        assert (data[types], data[types + 25], data[metadata + 22]) == (ColumnType.LONG, ColumnType.DATETIME2, 0)
        if patch == "types":
            data[types] = ColumnType.DECIMAL
        else:
            data[metadata + 22] = 7
        _with_crc(data, offset)
    writes = _decoded_at(bytes(data), FULL_1.name, TEMPORAL_WRITES)
    assert [item.event.offset for item in writes] == list(TEMPORAL_WRITES)
    for item in writes:
        assert item.rows == []
        [problem] = item.problems
        assert (problem.code, problem.offset, problem.event_type, problem.path, problem.message) == (
            code,
            item.event.offset,
            "WRITE_ROWS_V1",
            ("row 0", step),
            message,
        )
        assert problem.where == f"mysql-bin.000001@{item.event.offset} WRITE_ROWS_V1 -> row 0 -> {step}"


def test_an_unsupported_column_type_names_the_column() -> None:
    table_map = decode_table_map(_json_table_map(3, 1), MYSQL_8022)
    column = dataclasses.replace(table_map.columns[1], type=ColumnType.DECIMAL)
    with pytest.raises(UnsupportedError) as caught:
        codec_for(column, DecodeOptions(), Flavor.MYSQL)
    assert caught.value.path == ("col 2 j1",)


def test_a_stored_plan_error_is_raised_as_a_fresh_copy() -> None:
    table_map = decode_table_map(_json_table_map(3, 1), MYSQL_8022)
    columns = (table_map.columns[0], dataclasses.replace(table_map.columns[1], type=ColumnType.DECIMAL))
    plan = TablePlan(dataclasses.replace(table_map, columns=columns), DecodeOptions(), MYSQL_8022)
    image = plan.image(b"\x03", 2)
    row = b"\x00" + (1).to_bytes(4, "little") + b"\x00"
    raised = []
    for _ in range(3):
        with pytest.raises(UnsupportedError) as caught:
            image.interpret(row, 0, [])
        raised.append((caught.value, caught.value.path, caught.value.offset))
        caught.value.within("row 0").locate(offset=100)  # what the layers above add to each raise
    assert [(path, offset) for _, path, offset in raised] == [(("col 2 j1",), None)] * 3
    assert len({id(error) for error, _, _ in raised}) == 3


# --- one bad row: the rows before it are kept ------------------------------------------------------

ENUMSET_WRITE = 126321
"""full/mysql-bin.000001: WRITE_ROWS_V1 of `t_enumset` (id INT, e ENUM, e_u ENUM, ...) with 5 rows."""


def _row_starts(data: bytes, offset: int) -> list[int]:
    """File offsets where each row image of a rows event starts, from the undamaged file."""
    decoder = BinlogDecoder()
    for event in open_events(FULL_1):
        if event.offset == offset:
            header = decode_rows_header(event.body, event.type_code, event.fde)
            image = decoder.in_force[header.table_id].plan.image(header.present_before, header.num_columns)
            body_at = offset + event.fde.header_length
            pos, starts = header.rows_at, []
            while pos < len(header.data):
                starts.append(body_at + pos)
                _, pos = image.interpret(header.data, pos, [])
            assert data[body_at : body_at + len(event.body)] == event.body
            return starts
        decoder.decode(event)
    raise AssertionError(f"no event at {offset}")


def test_rows_before_a_damaged_row_are_kept_and_the_event_reports_the_damage() -> None:
    data = bytearray(file_bytes(FULL_1))
    starts = _row_starts(bytes(data), ENUMSET_WRITE)
    assert len(starts) == 5
    # row 3: null bitmap (1 byte, nothing NULL), id INT (4 bytes), then e ENUM (1 byte: label index)
    assert data[starts[3]] == 0 and data[starts[3] + 5] == 3  # 'large'
    data[starts[3] + 5] = 0xFF
    _with_crc(data, ENUMSET_WRITE)
    [item] = _decoded_at(bytes(data), FULL_1.name, (ENUMSET_WRITE,))
    assert [(change.row_index, change.after) for change in item.rows] == [
        (0, (1, "small", "ä", "v000", "", "", "on", "")),
        (
            1,
            (
                2,
                "x-large",
                "Ωμέγα",
                "v299",
                "x,y,z",
                ",".join(f"m{i:02d}" for i in range(64)),
                "off",
                "r,w,x",
            ),
        ),
        (2, (3, "medium", "日本", "v255", "x,z", "m63", "on", "x")),
    ]
    [problem] = item.problems
    assert (problem.code, problem.offset, problem.path) == ("MALFORMED", ENUMSET_WRITE, ("row 3", "col 2 e"))
    assert problem.message == "ENUM index 255 beyond its 4 labels"


def test_a_value_running_past_the_event_keeps_the_rows_before_it_and_is_malformed() -> None:
    # the last row's bytes cut short inside the rows part: rows 0-3 decode, row 4 runs past the end
    event, plan = first_rows_event([FULL_1], "WRITE_ROWS_V1")
    problems: list[BinlogError] = []
    short = dataclasses.replace(event, data=event.data[:-1])
    rows = decode_rows(short, plan, problems)
    full = decode_rows(event, plan, [])
    assert len(full) == 3
    assert rows == full[:2]
    [problem] = problems
    assert (problem.code, problem.path[0]) == ("MALFORMED", "row 2")
    assert problem.message.endswith("(the event ends before its fields do)")


# -- text kept as bytes ------------------------------------------------------------------------
#
# MySQL 5.7 with binlog_row_metadata=MINIMAL and every server before 8.0.1 name no charset for
# their text columns: the decoder reads them in DecodeOptions.default_charset (binlog-dump
# --default-charset).  Bytes that do not decode in it are kept as UndecodedText and reported,
# as bytes invalid in a charset the file names are; with no default (None: 'none') text stays
# bytes on request, unreported.

MYSQL_57 = "mysql-cdc-rs/5.7/30_write_rows_v2/log.bin"
"""MySQL 5.7.30, no optional metadata: INSERT (1, 'abcde') into a (INT, VARCHAR) table, at 934."""
V0_5117 = "mariadb-test-data/suite/binlog/std_data/ver_5_1_17.001"
"""MySQL 5.1.17: WRITE_ROWS_V0 of (0, 'one'), (1, 'two') at 461, UPDATE_ROWS_V0 at 548, DELETE_ROWS_V0 at 653."""

NOT_UTF16 = (
    "bytes not decodable as utf-16-be, the default charset (the file names none for the column: it may be binary); "
    "kept as bytes"
)


def _text_decoded(relative: str, default_charset: str | None) -> list[tuple[int, str, list[RowPair], list[str]]]:
    items = decode_file(corpus_path(relative), options=DecodeOptions(default_charset=default_charset))
    return [
        (d.event.offset, d.event.type_name, [(r.before, r.after) for r in d.rows], [str(p) for p in d.problems])
        for d in items
        if d.rows or d.problems
    ]


@pytest.mark.corpus
def test_text_the_file_names_no_charset_for_that_does_not_decode_in_the_default_charset_is_warned() -> None:
    # 'abcde' is 5 bytes: no UTF-16 text (utf16 is MySQL's UTF-16 big-endian)
    [(offset, type_name, [(before, after)], problems)] = _text_decoded(MYSQL_57, "utf-16-be")
    assert (offset, type_name, before, after) == (934, "WRITE_ROWS", None, (1, b"abcde"))
    assert type(after[1]) is UndecodedText
    assert problems == [f"log.bin@934 WRITE_ROWS -> col 2 @2: {NOT_UTF16} [UNDECODABLE_TEXT]"]


@pytest.mark.corpus
def test_text_the_file_names_no_charset_for_decodes_in_the_default_charset_without_a_warning() -> None:
    assert _text_decoded(MYSQL_57, "utf-8") == [(934, "WRITE_ROWS", [(None, (1, "abcde"))], [])]
    assert _text_decoded(MYSQL_57, "cp1251") == [(934, "WRITE_ROWS", [(None, (1, "abcde"))], [])]


@pytest.mark.corpus
@pytest.mark.parametrize("relative", [MYSQL_57, V0_5117])
def test_text_without_a_default_charset_stays_undecoded_bytes_without_a_warning(relative: str) -> None:
    # the compiled row reader (the first row of a layout) and the interpreter (the v0 reader) agree
    decoded = _text_decoded(relative, None)
    assert [problems for *_, problems in decoded] == [[] for _ in decoded]
    texts = [image[1] for *_, pairs, _ in decoded for pair in pairs for image in pair if image is not None]
    assert {type(text) for text in texts} == {UndecodedText}
    assert sorted(set(texts)) == ([b"abcde"] if relative == MYSQL_57 else [b"one", b"two"])


@pytest.mark.corpus
def test_pre_ga_rows_text_that_does_not_decode_in_the_default_charset_is_warned_once_per_value() -> None:
    warning = f"{NOT_UTF16} [UNDECODABLE_TEXT]"
    assert _text_decoded(V0_5117, "utf-16-be") == [
        (
            461,
            "WRITE_ROWS_V0",
            [(None, (0, b"one")), (None, (1, b"two"))],
            [f"ver_5_1_17.001@461 WRITE_ROWS_V0 -> col 2 @2: {warning}"] * 2,
        ),
        (
            548,
            "UPDATE_ROWS_V0",
            [((0, b"one"), (1, b"one")), ((1, b"two"), (2, b"two"))],
            [f"ver_5_1_17.001@548 UPDATE_ROWS_V0 -> col 2 @2: {warning}"] * 4,
        ),
        (653, "DELETE_ROWS_V0", [((2, b"two"), None)], [f"ver_5_1_17.001@653 DELETE_ROWS_V0 -> col 2 @2: {warning}"]),
    ]
    # in UTF-8 the same bytes are text, unwarned
    first = _text_decoded(V0_5117, "utf-8")[0]
    assert first == (461, "WRITE_ROWS_V0", [(None, (0, "one")), (None, (1, "two"))], [])
