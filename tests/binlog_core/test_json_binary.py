"""MySQL binary JSON decodes to the text MySQL prints; partial-update diffs render like mysqlbinlog -vv."""

from __future__ import annotations

import contextlib
import json
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlog_core.errors import BinlogError, MalformedError, TruncatedError
from binlog_core.json_binary import (
    MAX_DEPTH,
    JsonDiff,
    JsonWithOpaque,
    date_from_packed,
    datetime_from_packed,
    decode_json,
    decode_json_diff,
    double_text,
    render_json_diffs,
    time_from_packed,
)
from tests.binlog_core.json_corpus import json_values, rows_queries
from tests.harness.corpus import CORPUS

# --- a small encoder for hand-built documents, written from json_binary.h ---------------------

Value = tuple[int, bytes]
"""(type byte, bytes of the value as stored at an offset)."""


def varlen(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def lit(name: str) -> Value:
    return 0x04, bytes([{"null": 0, "true": 1, "false": 2}[name]])


def i16(v: int) -> Value:
    return 0x05, struct.pack("<h", v)


def u16(v: int) -> Value:
    return 0x06, struct.pack("<H", v)


def i32(v: int) -> Value:
    return 0x07, struct.pack("<i", v)


def u32(v: int) -> Value:
    return 0x08, struct.pack("<I", v)


def i64(v: int) -> Value:
    return 0x09, struct.pack("<q", v)


def u64(v: int) -> Value:
    return 0x0A, struct.pack("<Q", v)


def dbl(v: float) -> Value:
    return 0x0B, struct.pack("<d", v)


def string(s: str | bytes) -> Value:
    data = s.encode() if isinstance(s, str) else s
    return 0x0C, varlen(len(data)) + data


def opaque(field_type: int, data: bytes) -> Value:
    return 0x0F, bytes([field_type]) + varlen(len(data)) + data


def _container(items: list[tuple[bytes | None, Value]], large: bool, is_object: bool) -> bytes:
    fmt, off = ("<I", 4) if large else ("<H", 2)
    inlined = {0x04, 0x05, 0x06} | ({0x07, 0x08} if large else set())
    n = len(items)
    pos = 2 * off + n * ((off + 2 if is_object else 0) + off + 1)
    key_entries = b""
    for key, _ in items:
        assert key is not None or not is_object
        if is_object:
            assert key is not None
            key_entries += struct.pack(fmt, pos) + struct.pack("<H", len(key))
            pos += len(key)
    value_entries, values = b"", b""
    for _, (t, data) in items:
        if t in inlined:
            value_entries += bytes([t]) + data.ljust(off, b"\x00")
        else:
            value_entries += bytes([t]) + struct.pack(fmt, pos + len(values))
            values += data
    body = key_entries + value_entries + b"".join(k for k, _ in items if k is not None) + values
    return struct.pack(fmt, n) + struct.pack(fmt, 2 * off + len(body)) + body


def arr(values: list[Value], large: bool = False) -> Value:
    return (0x03 if large else 0x02), _container([(None, v) for v in values], large, False)


def obj(pairs: dict[str, Value], large: bool = False) -> Value:
    items = [(k.encode(), v) for k, v in pairs.items()]
    return (0x01 if large else 0x00), _container(items, large, True)


def doc(v: Value) -> bytes:
    return bytes([v[0]]) + v[1]


def packed_datetime(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, us: int = 0) -> bytes:
    intpart = (((y * 13 + mo) << 5 | d) << 17) | (h << 12 | mi << 6 | s)
    return struct.pack("<q", intpart << 24 | us)


def packed_time(h: int, mi: int, s: int, us: int = 0, negative: bool = False) -> bytes:
    value = (h << 12 | mi << 6 | s) << 24 | us
    return struct.pack("<q", -value if negative else value)


# --- documents spelled out byte by byte ------------------------------------------------------


def test_small_object_prints_keys_in_stored_order_with_mysql_separators() -> None:
    data = bytes.fromhex(
        "00"  # small object
        "0200 1f00"  # 2 members, 31 bytes
        "1200 0100  1300 0200"  # key "a" at 18, key "bb" at 19
        "05 0100  02 1500"  # int16 1 inlined; small array at 21
        "61 6262"  # keys
        "0200 0a00 04 0100 04 0000"  # [true, null]
    )
    assert decode_json(data) == '{"a": 1, "bb": [true, null]}'


def test_large_array_inlines_32_bit_integers_and_reads_int16_from_the_low_bytes() -> None:
    data = bytes.fromhex(
        "03"  # large array
        "04000000 1e000000"  # 4 elements, 30 bytes
        "07 00000080  08 ffffffff  05 ffffffff  0c 1c000000"  # int32, uint32, int16 -1 (sign-extended), string at 28
        "01 78"  # "x"
    )
    assert decode_json(data) == '[-2147483648, 4294967295, -1, "x"]'


def test_small_array_stores_int32_at_an_offset() -> None:
    assert decode_json(bytes.fromhex("02 0100 0b00 07 0700 70110100")) == "[70000]"


def test_empty_value_is_the_json_null_literal() -> None:
    assert decode_json(b"") == "null"


# --- every kind of value ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (lit("null"), "null"),
        (lit("true"), "true"),
        (lit("false"), "false"),
        (i16(-32768), "-32768"),
        (u16(65535), "65535"),
        (i32(-2147483648), "-2147483648"),
        (u32(4294967295), "4294967295"),
        (i64(-9223372036854775808), "-9223372036854775808"),
        (u64(18446744073709551615), "18446744073709551615"),
        (dbl(1.0), "1.0"),
        (string(""), '""'),
        (string("plain"), '"plain"'),
        (arr([]), "[]"),
        (obj({}), "{}"),
        (arr([], large=True), "[]"),
        (obj({}, large=True), "{}"),
    ],
)
def test_top_level_values_of_every_type(value: Value, text: str) -> None:
    assert decode_json(doc(value)) == text


def test_every_inlined_kind_in_small_and_large_containers() -> None:
    small = arr([lit("null"), lit("true"), lit("false"), i16(-5), u16(65535), i32(-70000), u32(70000)])
    large = arr([lit("null"), lit("true"), lit("false"), i16(-5), u16(65535), i32(-70000), u32(70000)], large=True)
    expected = "[null, true, false, -5, 65535, -70000, 70000]"
    assert decode_json(doc(small)) == expected
    assert decode_json(doc(large)) == expected
    assert len(doc(large)) == 1 + 8 + 7 * 5  # everything inlined in the large array


def test_nested_small_and_large_containers() -> None:
    value = obj(
        {
            "id": i64(1 << 40),
            "tags": arr([string("a"), obj({"deep": arr([dbl(0.5), lit("null")], large=True)})]),
            "big": obj({"k": u64(1 << 63)}, large=True),
        }
    )
    assert (
        decode_json(doc(value))
        == '{"id": 1099511627776, "tags": ["a", {"deep": [0.5, null]}], "big": {"k": 9223372036854775808}}'
    )


def test_strings_escape_like_double_quote_and_keep_non_ascii() -> None:
    text = 'q" b\\ \b\f\n\r\t \x00\x01\x1f\x7f é 中 😀'
    expected = '"q\\" b\\\\ \\b\\f\\n\\r\\t \\u0000\\u0001\\u001f\x7f é 中 😀"'
    assert decode_json(doc(string(text))) == expected
    assert decode_json(doc(obj({'k\n"': lit("true")}))) == '{"k\\n\\"": true}'
    assert json.loads(expected) == text


def test_long_strings_use_multi_byte_lengths() -> None:
    text = "x" * 20000
    data = doc(string(text))
    assert data[1:4] == bytes([0xA0, 0x9C, 0x01])  # 20000 in three 7-bit groups
    assert decode_json(data) == f'"{text}"'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (-1.0, "-1.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (0.1, "0.1"),
        (1 / 3, "0.3333333333333333"),
        (123.456, "123.456"),
        (100.0, "100.0"),
        (1e14, "100000000000000.0"),
        (123456789012345.0, "123456789012345.0"),
        (1e15, "1e15"),
        (1.5e15, "1.5e15"),
        (1234567890123456.7, "1234567890123456.8"),
        (9007199254740992.0, "9.007199254740992e15"),
        (1e16, "1e16"),
        (1e100, "1e100"),
        (-2.5e300, "-2.5e300"),
        (1.7976931348623157e308, "1.7976931348623157e308"),
        (0.00001, "0.00001"),
        (1.5e-7, "0.00000015"),
        (1e-15, "0.000000000000001"),
        (1.5e-15, "0.0000000000000015"),
        (1e-16, "1e-16"),
        (-2.5e-16, "-2.5e-16"),
        (2.2250738585072014e-308, "2.2250738585072014e-308"),
        (5e-324, "5e-324"),
    ],
)
def test_doubles_print_like_my_gcvt_with_a_point_zero_for_integral_values(value: float, text: str) -> None:
    assert double_text(value) == text
    assert decode_json(doc(dbl(value))) == text
    assert float(text) == value


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (opaque(246, bytes([6, 3]) + bytes.fromhex("807b01c8")), "123.456"),
        (opaque(246, bytes([3, 2]) + bytes.fromhex("7cf1")), "-3.14"),
        (opaque(246, bytes([2, 2]) + bytes.fromhex("80")), "0.00"),
        (opaque(246, bytes([0, 0])), "0"),
        (opaque(10, packed_datetime(2015, 1, 15)), '"2015-01-15"'),
        (opaque(10, packed_datetime(0, 0, 0)), '"0000-00-00"'),
        (opaque(11, packed_time(23, 24, 25)), '"23:24:25.000000"'),
        (opaque(11, packed_time(838, 59, 59, negative=True)), '"-838:59:59.000000"'),
        (opaque(11, packed_time(0, 0, 0, 500000, negative=True)), '"-00:00:00.500000"'),
        (opaque(12, packed_datetime(2015, 1, 15, 23, 24, 25)), '"2015-01-15 23:24:25.000000"'),
        (opaque(12, packed_datetime(9999, 12, 31, 23, 59, 59, 999999)), '"9999-12-31 23:59:59.999999"'),
        (opaque(7, packed_datetime(1970, 1, 1, 0, 0, 1, 123)), '"1970-01-01 00:00:01.000123"'),
        (opaque(253, b'say "hi"\n'), '"say \\"hi\\"\\n"'),
        (opaque(16, b"\x01\x02"), '"base64:type16:AQI="'),
        (opaque(252, b""), '"base64:type252:"'),
        (opaque(15, b"U"), '"base64:type15:VQ=="'),
        (
            opaque(255, b"\x00" * 14 + b"\xf0?" + b"\x00" * 7 + b"@"),
            '"base64:type255:AAAAAAAAAAAAAAAAAADwPwAAAAAAAABA"',
        ),
        (
            opaque(254, bytes(range(60))),
            '"base64:type254:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4\\nOTo7"',
        ),
    ],
)
def test_opaque_values_print_as_mysql_prints_them(value: Value, text: str) -> None:
    assert decode_json(doc(value)) == text
    assert decode_json(doc(arr([value]))) == f"[{text}]"


@pytest.mark.parametrize(
    ("value", "flagged"),
    [
        (opaque(10, packed_datetime(2012, 3, 18)), True),
        (arr([i16(1), opaque(246, bytes([4, 2]) + bytes.fromhex("800c"))]), True),
        (arr([i16(1), string("x"), dbl(2.5)]), False),
        (string("\x0f"), False),  # the opaque type byte inside a string is no opaque value
    ],
)
def test_a_document_holding_opaque_values_is_flagged_as_a_text_that_does_not_rebuild_it(
    value: Value, flagged: bool
) -> None:
    text = decode_json(doc(value))
    assert (type(text) is JsonWithOpaque, type(text) is str) == (flagged, not flagged)


def test_packed_temporal_helpers() -> None:
    assert date_from_packed(struct.unpack("<q", packed_datetime(2012, 3, 18, 7, 8, 9))[0]) == "2012-03-18"
    assert datetime_from_packed(struct.unpack("<q", packed_datetime(2012, 3, 18, 7, 8, 9, 10))[0]) == (
        "2012-03-18 07:08:09.000010"
    )
    assert time_from_packed(struct.unpack("<q", packed_time(100, 0, 1))[0]) == "100:00:01.000000"


# --- real documents --------------------------------------------------------------------------

JSON_8022 = CORPUS / "rust_mysql_common/json.binlog.000001"
JSON_OPAQUE_901 = CORPUS / "rust_mysql_common/json-opaque.binlog"
PAYLOAD_8031 = CORPUS / "mysql-binlog-connector-rust/mysql-bin.000057"

JOE, SUE, PETE = (
    '{"age": %d, "data": "xxxxxxxxxx", "name": "Joe"}',
    '{"age": %d, "data": "yyyyyyyyyy", "name": "Sue"}',
    '{"age": %d, "data": "zzzzzzzzzz", "name": "Pete"}',
)


@pytest.mark.corpus
def test_mysql_8022_documents_and_their_generated_columns_agree() -> None:
    full = [(image, index, raw) for image, index, raw in json_values(JSON_8022) if index not in image.partial]
    texts = [decode_json(raw) for _, _, raw in full]
    inserted = [JOE % 24, SUE % 32, PETE % 40]
    updated = [JOE % 24, JOE % 25, SUE % 32, SUE % 33, PETE % 40, PETE % 41]
    assert texts == inserted + inserted + updated + updated
    for (image, _, _), text in zip(full, texts, strict=True):
        # name VARCHAR AS (json_col->>'$.name'), age INT AS (json_col->'$.age'): computed by the server
        document = json.loads(text)
        assert image.values[2] == document["name"].encode()
        assert image.values[3] == struct.pack("<i", document["age"])


@pytest.mark.corpus
def test_mysql_8022_partial_update_diffs() -> None:
    partial = [(image, raw) for image, index, raw in json_values(JSON_8022) if index in image.partial]
    assert {image.event_type for image, _ in partial} == {"PARTIAL_UPDATE_ROWS"}
    diffs = [decode_json_diff(raw) for _, raw in partial]
    assert diffs == [[JsonDiff("REPLACE", "$.age", str(age))] for age in (26, 34, 42, 26, 34, 42)]
    assert render_json_diffs(diffs[0], "@2") == "JSON_REPLACE(@2, '$.age', 26)"
    # the generated age column of each after image shows the replaced value
    assert [image.values[3] for image, _ in partial] == [struct.pack("<i", a) for a in (26, 34, 42, 26, 34, 42)]


@pytest.mark.corpus
def test_mysql_901_opaque_values() -> None:
    texts = [decode_json(raw) for _, _, raw in json_values(JSON_OPAQUE_901)]
    assert [isinstance(text, JsonWithOpaque) for text in texts] == [True] * 6 + [False] * 2
    assert texts == [
        '{"a": "base64:type15:VQ=="}',  # VARCHAR opaque
        '{"b": "2012-03-18"}',
        '{"c": "2012-03-18 11:30:45.000000"}',
        '{"c": "87:31:46.654321"}',
        '{"d": 123.456}',
        '{"e": 9.00}',
        '{"e": [0, 1, true, false]}',
        '{"e": null}',
    ]


@pytest.mark.corpus
def test_mysql_8031_document_inside_a_compressed_transaction_matches_its_statement() -> None:
    values = json_values(PAYLOAD_8031)
    assert [(image.event_type, image.inner_index) for image, _, _ in values] == [
        ("UPDATE_ROWS", 3),
        ("UPDATE_ROWS", 3),
        ("WRITE_ROWS", 6),
    ]
    insert = rows_queries(PAYLOAD_8031)[-1]
    assert "'{\"c\": 1}'" in insert
    assert [decode_json(raw) for _, _, raw in values] == ['{"c": 1}'] * 3


def _corpus_documents() -> list[bytes]:
    return [
        raw
        for path in (JSON_8022, JSON_OPAQUE_901, PAYLOAD_8031)
        for image, i, raw in json_values(path)
        if i not in image.partial
    ]


def _hand_built_documents() -> list[bytes]:
    return [
        doc(obj({"a": i16(1), "bb": arr([lit("true"), dbl(2.5)]), "ccc": string("é\n")})),
        doc(
            arr(
                [opaque(246, bytes([6, 3]) + bytes.fromhex("807b01c8")), opaque(12, packed_datetime(2015, 1, 15))],
                large=True,
            )
        ),
        doc(obj({"k": u64(7), "l": obj({"m": i32(70000)}, large=True)}, large=True)),
        doc(string("x" * 300)),
    ]


@pytest.mark.corpus
def test_every_truncated_prefix_of_a_real_document_is_a_truncation() -> None:
    documents = _corpus_documents() + _hand_built_documents()
    assert len(documents) == 18 + 8 + 3 + 4
    for data in documents:
        decode_json(data)
        for cut in range(1, len(data)):
            with pytest.raises(TruncatedError):
                decode_json(data[:cut])


@pytest.mark.corpus
def test_every_truncated_prefix_of_a_real_diff_is_a_truncation() -> None:
    diffs = [raw for image, i, raw in json_values(JSON_8022) if i in image.partial]
    for data in diffs:
        for cut in range(1, len(data)):
            with pytest.raises(TruncatedError):
                decode_json_diff(data[:cut])


@pytest.mark.corpus
@settings(max_examples=400, deadline=None)
@given(st.data())
def test_flipped_bytes_decode_or_raise_only_decoder_errors(data: st.DataObject) -> None:
    documents = _corpus_documents() + _hand_built_documents()
    original = bytearray(data.draw(st.sampled_from(documents)))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(original) - 1))
        original[i] ^= data.draw(st.integers(1, 255))
    try:
        text = decode_json(bytes(original))
    except (TruncatedError, MalformedError):
        return
    assert isinstance(text, str)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_only_decoder_errors(raw: bytes) -> None:
    for decode in (decode_json, decode_json_diff):
        with contextlib.suppress(TruncatedError, MalformedError):
            decode(raw)


# --- malformed documents ---------------------------------------------------------------------


def _nested_arrays(depth: int) -> bytes:
    value = arr([])
    for _ in range(depth - 1):
        value = arr([value])
    return doc(value)


def test_nesting_stops_at_mysqls_depth_limit() -> None:
    assert decode_json(_nested_arrays(MAX_DEPTH)) == "[" * MAX_DEPTH + "]" * MAX_DEPTH
    with pytest.raises(MalformedError, match="deeper than 100"):
        decode_json(_nested_arrays(MAX_DEPTH + 1))
    with pytest.raises(MalformedError):
        decode_json(_nested_arrays(5000))  # never a RecursionError


def test_values_shared_between_entries_are_malformed() -> None:
    # [x, x] where both entries point at the same 2-element array: the doubling trick that
    # turns a few hundred bytes into an exponentially long text
    inner = bytes.fromhex("0200 0a00 04 0100 04 0100")
    data = bytes.fromhex("02 0200 1400 02 0a00 02 0a00") + inner
    with pytest.raises(MalformedError, match="share bytes"):
        decode_json(data)


@pytest.mark.parametrize(
    ("hex_data", "message"),
    [
        ("0d", "unknown JSON document type 0x0d"),
        ("02 0100 0700 0d 0000", "unknown JSON value type 0x0d"),
        ("04 03", "literal 0x03"),
        ("02 0100 0700 04 0300", "literal 0x03"),
        ("02 0200 0700 040100 040100", "cannot hold the entries"),  # 2 entries need 10 bytes
        ("02 0100 0900 0c 0200 0161", "lies outside the values"),  # string offset 2 points into the entries
        ("02 0100 0900 0c 0900 0161", "lies outside the values"),  # offset == size
        ("00 0100 0c00 0100 0100 040100 61", "outside the keys"),  # key offset 1 is inside the header
        ("00 0100 0b00 0b00 0500 040100 61", "outside the keys"),  # key runs past the object
        ("02 0100 0800 0c 0700 05", "ends first"),  # string of 5 bytes in an 8-byte array
        ("0c 8080808080", "over 5 bytes"),
        ("0c ffffffff7f", "32 bits"),
        ("0c 02 c328", "UTF-8"),
        ("00 0100 0c00 0b00 0100 040100 ff", "UTF-8"),
        ("0b 000000000000f07f", "finite"),
        ("0b 000000000000f8ff", "finite"),
        ("04 01 00", "bytes follow"),
        ("0f f6 03 0502 80", "needs 3 bytes, has 1"),  # DECIMAL(5,2) needs 3 bytes
        ("0f f6 01 05", "precision and scale"),
        ("0f f6 02 4200", "limits"),  # DECIMAL(66,0)
        ("0f f6 03 0101 8a", "more digits"),
        ("0f 0a 04 00000000", "not the 8"),
        ("0f 0c 08 ffffffffffffffff", "negative"),
        ("0f 0b 08 00000000 d0340000", "out of range"),  # TIME 845:00:00
        ("0f 0b 08 40420f00 00000000", "out of range"),  # 1000000 microseconds
        ("0f fd 01 ff", "UTF-8"),
    ],
)
def test_malformed_documents_raise_malformed_error(hex_data: str, message: str) -> None:
    with pytest.raises(MalformedError, match=message):
        decode_json(bytes.fromhex(hex_data))


def test_datetime_fields_beyond_their_ranges_are_malformed() -> None:
    for fields in [(10000, 1, 1), (2020, 1, 1, 24), (2020, 1, 1, 0, 60), (2020, 1, 1, 0, 0, 60)]:
        with pytest.raises(MalformedError, match="out of range"):
            decode_json(doc(opaque(12, packed_datetime(*fields))))
    with pytest.raises(MalformedError, match="out of range"):
        decode_json(doc(opaque(12, struct.pack("<q", 1_000_000))))


def test_errors_name_the_path_to_the_bad_value() -> None:
    bad = doc(obj({"a": arr([i16(1), (0x0C, b"\x05ab")])}))
    with pytest.raises(BinlogError) as caught:
        decode_json(bad)
    assert caught.value.path == (".a", "[1]")


# --- partial updates -------------------------------------------------------------------------


def _diff(operation: int, path: str, value: bytes | None = None) -> bytes:
    out = bytes([operation]) + varlen_packed(len(path.encode())) + path.encode()
    if value is not None:
        out += varlen_packed(len(value)) + value
    return out


def varlen_packed(n: int) -> bytes:
    """The length-encoded integer (``net_store_length``) in front of paths and values."""
    if n < 0xFB:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    return b"\xfd" + n.to_bytes(3, "little")


def test_diff_vector_of_every_operation() -> None:
    data = (
        _diff(0, "$.a", doc(i16(1)))
        + _diff(1, "$.b", doc(string("it's\n")))
        + _diff(1, "$[1]", doc(obj({"k": arr([i16(1)])})))
        + _diff(2, "$.c")
    )
    diffs = decode_json_diff(data)
    assert diffs == [
        JsonDiff("REPLACE", "$.a", "1"),
        JsonDiff("INSERT", "$.b", '"it\'s\\n"'),
        JsonDiff("INSERT", "$[1]", '{"k": [1]}'),
        JsonDiff("REMOVE", "$.c", None),
    ]
    assert render_json_diffs(diffs, "@3") == (
        "JSON_REMOVE(JSON_ARRAY_INSERT(JSON_INSERT(JSON_REPLACE(@3, '$.a', 1), '$.b', 'it\\'s\\n'), "
        "'$[1]', CAST('{\"k\": [1]}' AS JSON)), '$.c')"
    )
    assert render_json_diffs(diffs, "@3", multiline=True) == (
        "JSON_REMOVE(\n###      JSON_ARRAY_INSERT(\n###      JSON_INSERT(\n###      JSON_REPLACE(@3, '$.a', 1),"
        "\n###      '$.b', 'it\\'s\\n'),\n###      '$[1]', CAST('{\"k\": [1]}' AS JSON)),\n###      '$.c')"
    )


def test_consecutive_diffs_of_one_function_share_a_call() -> None:
    diffs = [
        JsonDiff("REPLACE", "$.a", "1.5"),
        JsonDiff("REPLACE", "$.b", "null"),
        JsonDiff("REPLACE", "$.c", '"2015-01-15"'),
        JsonDiff("REPLACE", "$.d", '"base64:type16:AQI="'),
        JsonDiff("REPLACE", "$.e", "[]"),
    ]
    assert render_json_diffs(diffs, "@1") == (
        "JSON_REPLACE(@1, '$.a', 1.5, '$.b', null, '$.c', '2015-01-15', '$.d', 'base64:type16:AQI=', "
        "'$.e', CAST('[]' AS JSON))"
    )
    assert render_json_diffs([], "@1") == "@1"


def test_diff_values_quote_control_characters_like_mysqlbinlog() -> None:
    diffs = decode_json_diff(_diff(0, "$.s", doc(string("a\\b\x01\x1f\té"))))
    assert diffs[0].value == '"a\\\\b\\u0001\\u001f\\té"'
    assert render_json_diffs(diffs, "@2") == "JSON_REPLACE(@2, '$.s', 'a\\\\b\\x01\\x1f\\té')"


def test_diff_with_empty_value_is_json_null_and_long_values_use_wide_lengths() -> None:
    long_value = doc(string("y" * 300))
    diffs = decode_json_diff(_diff(0, "$.a", b"") + _diff(1, "$.b", long_value))
    assert diffs == [JsonDiff("REPLACE", "$.a", "null"), JsonDiff("INSERT", "$.b", '"' + "y" * 300 + '"')]


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (bytes([3, 3]) + b"$.a", MalformedError, "operation 3"),
        (_diff(2, "a.b"), MalformedError, "start with"),
        (_diff(0, "$.a", doc(i16(1)))[:-1], TruncatedError, "value"),
        (bytes([0, 0xFB]) + b"$", MalformedError, "length-encoded"),
        (_diff(0, "$.a", bytes.fromhex("0d")), MalformedError, "type 0x0d"),
    ],
)
def test_malformed_diffs_raise_decoder_errors(data: bytes, error: type[BinlogError], message: str) -> None:
    with pytest.raises(error, match=message) as caught:
        decode_json_diff(data)
    assert caught.value.path[0] == "diff 0"
