"""TABLE_MAP: the per-type metadata of each column, the post-header, the null bitmap and every
optional metadata field, on real events and against ``mariadb-binlog --print-table-metadata``."""

from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path

import pytest

from binlog_core.charsets import collation_info
from binlog_core.constants import ChecksumAlg, ColumnType, EventType, Flavor
from binlog_core.decoder import BinlogDecoder, DecodedEvent, decode_file
from binlog_core.errors import MalformedError, TruncatedError, UnknownOptionalMetadataWarning
from binlog_core.event import FormatDescription
from binlog_core.events import body_warnings, decode_body
from binlog_core.framing import iter_events
from binlog_core.rows import Row
from binlog_core.table_map import Column, OptionalField, TableMap, decode_table_map
from tests.binlog_core.events import built_event, corpus_event, event_at, file_events
from tests.binlog_core.real_events import MISC, decode_bytes, file_bytes, pick_events, with_body
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path
from tests.harness.mariadb_binlog import require_mariadb_binlog

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


# ==============================================================================================
# The post-header, the null bitmap and every optional metadata field, on real TABLE_MAP events.
#
# Expected values come from the CREATE TABLE statements of the same files (the fixture workload
# in tests/fixtures/workload_types.py; the corpus files log their own DDL) and from what
# ``mariadb-binlog --print-table-metadata`` prints: names, UNSIGNED, NOT NULL, CHARSET/COLLATE,
# ENUM/SET labels and the primary key of every map (the agreement test at the end). Fields no
# real file holds (PRIMARY_KEY_WITH_PREFIX, ENUM_AND_SET_COLUMN_CHARSET, an unknown type) are
# built from MySQL's writer, ``Table_map_log_event::init_*_field`` in sql/log_event.cc, and its
# reader, ``Table_map_event::Optional_metadata_fields`` in libs/mysql/binlog/event/rows_event.cpp.
# https://github.com/mysql/mysql-server/blob/trunk/libs/mysql/binlog/event/rows_event.cpp
# ==============================================================================================

MARIADB_FULL = FIXTURES / "full" / "mysql-bin.000001"
"""MariaDB 10.11, binlog_row_metadata=FULL: the type workload's first file."""
T_INT, T_DECIMAL, T_STRING, T_BINARY, T_ENUMSET, T_JSON_GEO = 9753, 12138, 24821, 47935, 124358, 130520
"""Offsets of the first TABLE_MAP of each table in that file."""


def real_map(path: Path, offset: int) -> TableMap:
    event = event_at(path, offset)
    assert event.type_code == EventType.TABLE_MAP
    return decode_table_map(event.body, event.fde)


def corpus_map(relative: str, offset: int) -> TableMap:
    return real_map(corpus_path(relative), offset)


# -- post-header: table id and flags ---------------------------------------------------------


@pytest.mark.corpus
def test_table_id_is_four_bytes_when_the_description_gives_a_six_byte_post_header() -> None:
    # MySQL 5.2.2's development tree (-a_drop6p13) declares TABLE_MAP's post-header as 6 bytes:
    # table_id u32 | flags u16 (Table_map_event: "Master is of an intermediate source tree
    # before 5.1.4. Id is 4 bytes"); it writes no metadata and no null bitmap either
    relative = "mysql-server/suite/binlog/std_data/ver_5_1-wl2325_r.001"
    event = corpus_event(relative, 428)
    assert event.fde.post_header_len(EventType.TABLE_MAP) == 6
    assert event.body.hex(" ") == "00 00 00 00 00 00 04 74 65 73 74 00 02 74 31 00 02 03 fe"
    table_map = decode_table_map(event.body, event.fde)
    assert (table_map.table_id, table_map.flags, table_map.qualified_name) == (0, 0, "test.t1")
    # CREATE TABLE t1 (a int, b char(50)): nothing in the event says NOT NULL
    assert [(c.type_name, c.meta, c.nullable) for c in table_map.columns] == [("LONG", 0, True), ("STRING", 0, True)]
    # the rows events name table id 0 and decode with this map: INSERT (0,'one'), (1,'two') ...
    changes = [(r.op, r.before, r.after) for d in decode_file(corpus_path(relative)) for r in d.rows]
    assert changes[:2] == [("insert", None, (0, "one")), ("insert", None, (1, "two"))]


def test_table_id_is_six_bytes_with_the_usual_eight_byte_post_header() -> None:
    event = event_at(MARIADB_FULL, T_INT)
    assert event.fde.post_header_len(EventType.TABLE_MAP) == 8
    assert event.body[:8].hex(" ") == "12 00 00 00 00 00 01 00"  # "mapped to number 18", flags 1
    big_id = (1 << 40) + 18
    body = big_id.to_bytes(6, "little") + event.body[6:]
    assert decode_table_map(body, event.fde).table_id == big_id


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("relative", "offset", "flags"),
    [
        # TM_BIT_LEN_EXACT_F (1) | TM_GENERATED_INVISIBLE_PK_F (4): t2 got a generated invisible
        # primary key (its CREATE TABLE in the file: `my_row_id` ... INVISIBLE, PRIMARY KEY)
        ("mysql-server/std_data/rpl_binlog_with_gipk_info_full_metadata.000001", 1196, 5),
        ("mysql-server/std_data/rpl_binlog_with_gipk_info_full_metadata.000001", 529, 1),
        # TM_BIT_LEN_EXACT_F | TM_REFERRED_FK_DB_F (2), MySQL 9.6
        ("rust_mysql_common/binlog_transaction_with_GTID_TAG.000001", 405, 3),
    ],
)
def test_flags_are_the_post_header_word_as_written(relative: str, offset: int, flags: int) -> None:
    assert corpus_map(relative, offset).flags == flags


# -- null bitmap -----------------------------------------------------------------------------


def test_null_bitmap_marks_the_nullable_columns_least_significant_bit_first() -> None:
    # t_int: id, nn_i and nn_bi_u are NOT NULL; the bitmap fe 07 sets bits 1-10
    table_map = real_map(MARIADB_FULL, T_INT)
    assert [c.name for c in table_map.columns if not c.nullable] == ["id", "nn_i", "nn_bi_u"]
    assert [c.nullable for c in table_map.columns] == [False] + [True] * 10 + [False, False]


# -- SIGNEDNESS ------------------------------------------------------------------------------


def test_signedness_has_one_bit_per_numeric_column_most_significant_first() -> None:
    # 01 02 2a a8: 0010 1010 1010 1000 over the 13 integer columns of t_int
    table_map = real_map(MARIADB_FULL, T_INT)
    assert [c.name for c in table_map.columns if c.unsigned] == ["ti_u", "si_u", "mi_u", "i_u", "bi_u", "nn_bi_u"]
    assert all(c.unsigned is not None for c in table_map.columns)


def test_signedness_counts_decimal_float_and_double_as_numeric() -> None:
    # t_decimal: DECIMAL(12,3) UNSIGNED is the tenth numeric column; FLOAT and DOUBLE own bits too
    table_map = real_map(MARIADB_FULL, T_DECIMAL)
    assert [c.name for c in table_map.columns if c.unsigned] == ["d12_3u"]
    assert [c.unsigned for c in table_map.columns].count(False) == 13


@pytest.mark.corpus
def test_signedness_skips_the_columns_that_are_not_numeric() -> None:
    # CREATE TABLE t1 (f1 INT UNSIGNED INVISIBLE, f2 INT UNSIGNED INVISIBLE, f3 INT, f4 TEXT,
    # f5 BLOB, f6 BIGINT UNSIGNED INVISIBLE): 01 01 d0 = 1101 for f1, f2, f3, f6
    table_map = corpus_map("rust_mysql_common/binlog-invisible-columns.000001", 942)
    assert [(c.name, c.unsigned) for c in table_map.columns] == [
        ("f1", True),
        ("f2", True),
        ("f3", False),
        ("f4", None),
        ("f5", None),
        ("f6", True),
    ]


# -- DEFAULT_CHARSET, COLUMN_CHARSET ---------------------------------------------------------


def test_column_charset_lists_the_collation_of_every_character_column() -> None:
    # t_string (COLUMN_CHARSET): utf8mb4_general_ci 45, utf8mb4_bin 46, latin1 8, ucs2 35,
    # utf16 54, utf32 60, utf8mb3 33; the INT id has none
    table_map = real_map(MARIADB_FULL, T_STRING)
    assert [c.collation for c in table_map.columns] == [
        None, 45, 45, 45, 45, 45, 45, 45, 45, 45, 46, 8, 8, 8, 35, 35, 54, 54, 60, 33, 45,
    ]  # fmt: skip


def test_default_charset_applies_to_every_character_column_but_the_overridden_ones() -> None:
    # t_json_geo (MariaDB): 02 03 3f 00 2e = default binary (63), column 0 of the character
    # columns (the JSON, a LONGTEXT utf8mb4_bin) 46; MariaDB counts GEOMETRY as a character column
    table_map = real_map(MARIADB_FULL, T_JSON_GEO)
    assert [(c.name, c.collation) for c in table_map.columns[:4]] == [
        ("id", None),
        ("j", 46),
        ("g", 63),
        ("p", 63),
    ]
    assert {c.collation for c in table_map.columns[2:]} == {63}


@pytest.mark.corpus
def test_mysql_default_charset_counts_vector_columns_as_character_columns() -> None:
    # CREATE TABLE bar(id SERIAL, vector_column VECTOR(2) NOT NULL, foo TEXT, vector_column2
    # VECTOR(4) NOT NULL): 02 05 3f 01 fc ff 00 = default 63, character column 1 (foo) 255
    table_map = corpus_map("rust_mysql_common/vector.binlog", 1170)
    assert [(c.name, c.collation) for c in table_map.columns] == [
        ("id", None),
        ("vector_column", 63),
        ("foo", 255),
        ("vector_column2", 63),
    ]


def test_binary_columns_have_the_binary_collation() -> None:
    # t_binary: 02 01 3f -- every BINARY/VARBINARY/BLOB column is binary (63)
    table_map = real_map(MARIADB_FULL, T_BINARY)
    assert [c.collation for c in table_map.columns] == [None] + [63] * 9


# -- COLUMN_NAME, ENUM/SET values and their charsets -----------------------------------------


def test_column_names_are_those_of_the_create_table() -> None:
    assert real_map(MARIADB_FULL, T_INT).column_names == (
        "id", "ti", "ti_u", "si", "si_u", "mi", "mi_u", "i", "i_u", "bi", "bi_u", "nn_i", "nn_bi_u",
    )  # fmt: skip


def test_enum_and_set_labels_and_their_default_charset() -> None:
    # t_enumset: ENUM_AND_SET_DEFAULT_CHARSET 0a 01 2d (utf8mb4_general_ci), then
    # SET_STR_VALUE and ENUM_STR_VALUE, one label list per column of that kind, in column order
    columns = real_map(MARIADB_FULL, T_ENUMSET).columns
    assert [(c.name, c.type_name, c.collation) for c in columns[1:3]] == [("e", "ENUM", 45), ("e_u", "ENUM", 45)]
    assert columns[1].enum_values == ("small", "medium", "large", "x-large")
    assert columns[2].enum_values == ("ä", "ö", "ü", "日本", "Ωμέγα")
    assert columns[3].enum_values == tuple(f"v{i:03d}" for i in range(300))
    assert columns[4].set_values == ("x", "y", "z")
    assert columns[5].set_values == tuple(f"m{i:02d}" for i in range(64))
    assert (columns[6].enum_values, columns[7].set_values) == (("on", "off"), ("r", "w", "x"))
    assert all(c.set_values is None for c in columns if c.type_name == "ENUM")


@pytest.mark.corpus
def test_mysql_enum_and_set_labels() -> None:
    # CREATE TABLE t(f1 CHAR(128), f2 VARCHAR(300), f3 ENUM('var1', 'variant2', 'foo'),
    # f4 SET('one', 'two', 'three', 'four'), f5 TEXT) -- MySQL 8.0.28, utf8mb4_0900_ai_ci (255)
    columns = corpus_map("rust_mysql_common/mysql-enum-string-set.000001", 946).columns
    assert [(c.name, c.type_name, c.length, c.collation) for c in columns] == [
        ("f1", "STRING", 512, 255),
        ("f2", "VARCHAR", 1200, 255),
        ("f3", "ENUM", 1, 255),
        ("f4", "SET", 1, 255),
        ("f5", "BLOB", 0, 255),
    ]
    assert columns[2].enum_values == ("var1", "variant2", "foo")
    assert columns[3].set_values == ("one", "two", "three", "four")


# -- GEOMETRY_TYPE, primary keys, visibility, vector dimensions ------------------------------


def test_geometry_type_names_the_kind_of_each_geometry_column() -> None:
    # t_json_geo: 07 09 00 01 02 03 04 05 06 07 01 -- GEOMETRY 0, POINT 1, LINESTRING 2, POLYGON 3,
    # MULTIPOINT 4, MULTILINESTRING 5, MULTIPOLYGON 6, GEOMETRYCOLLECTION 7, POINT REF_SYSTEM_ID 1
    columns = real_map(MARIADB_FULL, T_JSON_GEO).columns
    assert [c.geometry_type for c in columns] == [None, None, 0, 1, 2, 3, 4, 5, 6, 7, 1]


def test_simple_primary_key_lists_the_key_columns() -> None:
    table_map = real_map(MARIADB_FULL, T_INT)
    assert table_map.primary_key == (0,)
    assert [c.primary_key_prefix for c in table_map.columns] == [0] + [None] * 12


@pytest.mark.corpus
def test_column_visibility_marks_invisible_columns() -> None:
    # 0c 01 38 = 0011 1000: f1, f2 and f6 were created INVISIBLE
    columns = corpus_map("rust_mysql_common/binlog-invisible-columns.000001", 942).columns
    assert [c.name for c in columns if not c.visible] == ["f1", "f2", "f6"]


@pytest.mark.corpus
def test_generated_invisible_primary_key_is_an_invisible_key_column() -> None:
    # mariadb-binlog: "# Primary Key(my_row_id)"; CREATE TABLE `t2` (`my_row_id` bigint unsigned
    # NOT NULL AUTO_INCREMENT /*!80023 INVISIBLE */, `f1` int, `really_unique_column_name` int, ...)
    table_map = corpus_map("mysql-server/std_data/rpl_binlog_with_gipk_info_full_metadata.000001", 1196)
    assert table_map.primary_key == (0,)
    assert [(c.name, c.unsigned, c.nullable, c.visible) for c in table_map.columns] == [
        ("my_row_id", True, False, False),
        ("f1", False, True, True),
        ("really_unique_column_name", False, True, True),
    ]


@pytest.mark.corpus
def test_vector_dimensionality_gives_each_vector_column_its_dimension() -> None:
    # foo: VECTOR(3); bar: VECTOR(2), TEXT, VECTOR(4) -- 0d 01 03 and 0d 02 02 04
    foo = corpus_map("rust_mysql_common/vector.binlog", 1004)
    bar = corpus_map("rust_mysql_common/vector.binlog", 1170)
    assert [c.vector_dimensions for c in foo.columns] == [None, 3]
    assert [c.vector_dimensions for c in bar.columns] == [None, 2, None, 4]
    assert [(c.type_name, c.pack_length) for c in bar.columns] == [
        ("LONGLONG", 0),
        ("VECTOR", 4),
        ("BLOB", 2),
        ("VECTOR", 4),
    ]


# -- fields no real file holds ---------------------------------------------------------------


def _with_optional(body: bytes, *fields: tuple[int, bytes]) -> bytes:
    """A real map body with its optional metadata replaced by ``fields`` ({type u8 | len | value})."""
    return body + b"".join(bytes([field_type, len(value)]) + value for field_type, value in fields)


def _t_enumset_without_optional() -> tuple[bytes, FormatDescription]:
    """t_enumset's map up to its null bitmap (8 columns: INT, 3 ENUM, 2 SET, ENUM, SET)."""
    event = event_at(MARIADB_FULL, T_ENUMSET)
    body = event.body
    # table_id u48 | flags u16 | schema | table | 8 column types | 14 bytes of metadata | bitmap
    pos = 8
    pos += 1 + body[pos] + 1  # len | "fixture" | 00
    pos += 1 + body[pos] + 1  # len | "t_enumset" | 00
    assert body[pos] == 8
    pos += 1 + 8
    assert body[pos] == 14
    pos += 1 + 14 + 1
    assert body[pos] == OptionalField.SIGNEDNESS  # where the optional metadata starts
    return body[:pos], event.fde


def test_primary_key_with_prefix_gives_the_key_order_and_each_prefix_length() -> None:
    # PRIMARY KEY (e300(10), id): 09 | {column index | prefix length (0: the whole column)}
    body, fde = _t_enumset_without_optional()
    key = (OptionalField.PRIMARY_KEY_WITH_PREFIX, b"\x03\x0a\x00\x00")
    table_map = decode_table_map(_with_optional(body, key), fde)
    assert table_map.primary_key == (3, 0)
    assert [c.primary_key_prefix for c in table_map.columns] == [0, None, None, 10, None, None, None, None]


def test_enum_and_set_column_charset_gives_each_enum_and_set_column_its_collation() -> None:
    # ENUM_AND_SET_COLUMN_CHARSET: one collation per ENUM/SET column, in column order
    body, fde = _t_enumset_without_optional()
    collations = bytes([45, 46, 8, 33, 63, 45, 8])
    table_map = decode_table_map(_with_optional(body, (OptionalField.ENUM_AND_SET_COLUMN_CHARSET, collations)), fde)
    assert [c.collation for c in table_map.columns] == [None, 45, 46, 8, 33, 63, 45, 8]


def test_unknown_optional_metadata_type_is_kept_raw_and_the_fields_after_it_still_apply() -> None:
    body, fde = _t_enumset_without_optional()
    names = b"".join(bytes([len(n)]) + n for n in (b"id", b"e", b"e_u", b"e300", b"s", b"s64", b"e_nn", b"s_nn"))
    table_map = decode_table_map(_with_optional(body, (99, b"new"), (OptionalField.COLUMN_NAME, names)), fde)
    assert table_map.unknown_optional == ((99, b"new"),)
    assert table_map.optional_fields == (99, OptionalField.COLUMN_NAME)
    assert table_map.column_names == ("id", "e", "e_u", "e300", "s", "s64", "e_nn", "s_nn")


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ((OptionalField.SIGNEDNESS, b""), "SIGNEDNESS: 0 bytes for 1 numeric"),
        ((OptionalField.COLUMN_NAME, b"\x02id"), "COLUMN_NAME: 1 entries for 8 columns"),
        ((OptionalField.ENUM_STR_VALUE, b"\x01\x01a"), "ENUM_VALUES: 1 entries for 4 columns"),
        ((OptionalField.COLUMN_VISIBILITY, b"\xff\x00"), None),  # 16 bits for 8 columns: fine
        ((OptionalField.SIMPLE_PRIMARY_KEY, b"\x08"), "primary key column 8 of 8"),
        ((OptionalField.ENUM_AND_SET_DEFAULT_CHARSET, b"\x2d\x07\x08"), "charset override for column 7 of 7"),
        ((OptionalField.GEOMETRY_TYPE, b"\x01"), "GEOMETRY_TYPE: 1 entries for 0 columns"),
    ],
)
def test_optional_metadata_that_does_not_fit_the_columns_is_malformed(
    field: tuple[int, bytes], message: str | None
) -> None:
    body, fde = _t_enumset_without_optional()
    if message is None:
        assert decode_table_map(_with_optional(body, field), fde).columns[0].visible is True
        return
    with pytest.raises(MalformedError, match=message):
        decode_table_map(_with_optional(body, field), fde)


def test_optional_field_longer_than_the_event_is_truncated() -> None:
    body, fde = _t_enumset_without_optional()
    with pytest.raises(TruncatedError):
        decode_table_map(body + bytes([OptionalField.COLUMN_NAME, 40]) + b"\x02id", fde)


NEWER_FIELD = (14, b"\x03\x01\x02")
"""An optional metadata field of a type no server writes yet (13, VECTOR_DIMENSIONALITY, is the
last one MySQL 9 and MariaDB 11.8 define); a newer server adds one the same way,
``{type u8 | len packed | value}`` (``Table_map_event::Optional_metadata_fields``)."""


def _with_newer_field(path: Path, offset: int) -> bytes:
    """The real file with the TABLE_MAP at ``offset`` carrying :data:`NEWER_FIELD` after its own fields."""
    event = next(e for e in pick_events("map", (path,), every=True) if e.offset == offset)
    field_type, value = NEWER_FIELD
    body = event_at(path, offset).body + bytes([field_type, len(value)]) + value
    return with_body(file_bytes(path), event, body)


def test_unknown_optional_metadata_type_is_a_warning_on_its_table_map_event_and_the_rows_still_decode() -> None:
    damaged = list(decode_bytes(_with_newer_field(MARIADB_FULL, T_ENUMSET), MARIADB_FULL.name))
    whole = list(decode_bytes(file_bytes(MARIADB_FULL), MARIADB_FULL.name))
    grown = len(NEWER_FIELD[1]) + 2
    mapped = next(d for d in damaged if d.event.offset == T_ENUMSET)
    assert [(type(p), p.code, p.severity, str(p)) for p in mapped.problems] == [
        (
            UnknownOptionalMetadataWarning,
            "UNKNOWN_OPTIONAL_METADATA",
            "warning",
            "mysql-bin.000001@124358 TABLE_MAP -> optional metadata 14: "
            "optional metadata field type 14 (3 bytes) is unknown; kept raw [UNKNOWN_OPTIONAL_METADATA]",
        )
    ]
    assert isinstance(mapped.body, TableMap)
    assert mapped.body.unknown_optional == (NEWER_FIELD,)
    assert mapped.body.column_names == ("id", "e", "e_u", "e300", "s", "s64", "e_nn", "s_nn")

    # every other event, its rows included, decodes as in the real file (those after it moved)
    def seen(items: list[DecodedEvent], moved: int) -> list[tuple[int, list[tuple[str, Row | None, Row | None]], int]]:
        return [
            (
                d.event.offset - (moved if d.event.offset > T_ENUMSET else 0),
                [(r.op, r.before, r.after) for r in d.rows],
                len(d.problems),
            )
            for d in items
            if d.event.offset != T_ENUMSET
        ]

    assert seen(damaged, grown) == seen(whole, 0)
    assert sum(len(d.rows) for d in damaged if d.event.offset > T_ENUMSET) > 0


def test_unknown_optional_metadata_type_is_reported_on_every_map_event_that_carries_it() -> None:
    # the decoder reuses the map and plan of a body it has seen: the warning still comes each time
    data = _with_newer_field(MARIADB_FULL, T_ENUMSET)
    decoder = BinlogDecoder()
    event = next(e for e in iter_events(io.BytesIO(data), "m.000001") if e.offset == T_ENUMSET)
    assert [[p.code for p in decoder.decode(event).problems] for _ in range(3)] == [["UNKNOWN_OPTIONAL_METADATA"]] * 3


def test_table_map_body_warnings_name_each_unknown_optional_field() -> None:
    body, fde = _t_enumset_without_optional()
    event = built_event(fde, EventType.TABLE_MAP, _with_optional(body, (99, b"new"), (14, b"")))
    assert [(p.code, p.offset, p.event_type, p.path, p.message) for p in body_warnings(event, decode_body(event))] == [
        (
            "UNKNOWN_OPTIONAL_METADATA",
            4,
            "TABLE_MAP",
            ("optional metadata 99",),
            "optional metadata field type 99 (3 bytes) is unknown; kept raw",
        ),
        (
            "UNKNOWN_OPTIONAL_METADATA",
            4,
            "TABLE_MAP",
            ("optional metadata 14",),
            "optional metadata field type 14 (0 bytes) is unknown; kept raw",
        ),
    ]


# -- agreement with mariadb-binlog --print-table-metadata ------------------------------------

_AT = re.compile(r"^# at (\d+)$")
_MAP = re.compile(r"\tTable_map: `((?:[^`]|``)*)`\.`((?:[^`]|``)*)` mapped to number (\d+)$")
_NAMED = re.compile(r"^`((?:[^`]|``)*)` (.*)$")
_LABELS = re.compile(r"^(?:ENUM|SET)(?: NOT NULL)?\((.*?)\)(?: CHARSET .*)?$")
_COLLATE = re.compile(r" COLLATE (\w+)$")
_PRIMARY_KEY = re.compile(r"^# Primary Key\((.*)\)$")

PrintedColumn = tuple[str | None, bool, bool, str | None, tuple[str, ...] | None]
"""name (None without COLUMN_NAME), NOT NULL, UNSIGNED, collation name, ENUM/SET labels."""

UNKNOWN_TO_THE_TOOL = frozenset({255})
"""utf8mb4_0900_ai_ci, MySQL 8's default, which MariaDB 10.11 lacks: it prints no charset then."""


def _printed_column(text: str) -> PrintedColumn:
    named = _NAMED.match(text)
    name, rest = (named[1].replace("``", "`"), named[2]) if named else (None, text)
    labels = _LABELS.match(rest)
    collate = _COLLATE.search(rest)
    return (
        name,
        " NOT NULL" in rest,
        " UNSIGNED" in rest,
        collate[1] if collate else None,
        tuple(re.findall(r"'((?:[^']|'')*)'", labels[1])) if labels else None,
    )


def printed_table_maps(path: Path) -> dict[int, tuple[str, str, int, list[PrintedColumn], str | None]]:
    """For each TABLE_MAP the tool prints: schema, table, table id, columns, ``Primary Key(...)``."""
    result = subprocess.run(
        [require_mariadb_binlog(), "--print-table-metadata", str(path)], capture_output=True, check=False, timeout=60
    )
    maps: dict[int, tuple[str, str, int, list[PrintedColumn], str | None]] = {}
    offset, columns, in_columns = 0, list[PrintedColumn](), False
    for line in result.stdout.decode("utf-8", "replace").splitlines():
        if (at := _AT.match(line)) is not None:
            offset = int(at[1])
        elif (mapped := _MAP.search(line)) is not None:
            columns, in_columns = [], True
            maps[offset] = (mapped[1], mapped[2], int(mapped[3]), columns, None)
        elif in_columns and (line.startswith("# Columns(") or line.startswith("#         ")):
            text = line.removeprefix("# Columns(").removeprefix("#         ")
            columns.append(_printed_column(text[:-1]))  # each line ends with "," or, the last, ")"
            in_columns = text.endswith(",")
        elif (key := _PRIMARY_KEY.match(line)) is not None and offset in maps:
            maps[offset] = (*maps[offset][:4], key[1])
    return maps


def _as_printed(table_map: TableMap) -> tuple[str, str, int, list[PrintedColumn], str | None]:
    def collation(column: Column) -> str | None:
        if column.collation is None or column.collation == 63 or column.collation in UNKNOWN_TO_THE_TOOL:
            return None
        info = collation_info(column.collation, Flavor.MARIADB)
        return None if info is None else info.name

    columns = [
        (c.name, not c.nullable, bool(c.unsigned), collation(c), c.enum_values or c.set_values)
        for c in table_map.columns
    ]
    names = [table_map.columns[i].display_name for i in table_map.primary_key]
    prefixes = [table_map.columns[i].primary_key_prefix for i in table_map.primary_key]
    key = ", ".join(name if not prefix else f"{name}({prefix})" for name, prefix in zip(names, prefixes, strict=True))
    return table_map.schema, table_map.table, table_map.table_id, columns, key or None


AGREEMENT = {
    "full-1": FIXTURES / "full" / "mysql-bin.000001",
    "full-3": FIXTURES / "full" / "mysql-bin.000003",
    "full-4": FIXTURES / "full" / "mysql-bin.000004",
    "metadata_minimal-1": FIXTURES / "metadata_minimal" / "mysql-bin.000001",
    "misc": MISC,
}
CORPUS_AGREEMENT = (
    "rust_mysql_common/mariadb-bin.000001",  # MariaDB 10.5
    "rust_mysql_common/binlog-invisible-columns.000001",  # MySQL 8.0.26
    "rust_mysql_common/mysql-enum-string-set.000001",  # MySQL 8.0.28
    "mysql-server/std_data/rpl_binlog_with_gipk_info_full_metadata.000001",  # MySQL 8.0.32
    "mysql-server/std_data/rpl_binlog_with_gipk_info_minimal_metadata.000001",
)


def assert_maps_agree_with_mariadb_binlog(path: Path) -> None:
    ours = {
        event.offset: _as_printed(decode_table_map(event.body, event.fde))
        for event in file_events(path)
        if event.type_code == EventType.TABLE_MAP
    }
    assert ours, f"{path.name} has no TABLE_MAP"
    assert ours == printed_table_maps(path)


@pytest.mark.parametrize("source", sorted(AGREEMENT))
def test_table_maps_agree_with_mariadb_binlog_print_table_metadata(source: str) -> None:
    assert_maps_agree_with_mariadb_binlog(AGREEMENT[source])


@pytest.mark.corpus
@pytest.mark.parametrize("relative", CORPUS_AGREEMENT)
def test_table_maps_of_corpus_files_agree_with_mariadb_binlog_print_table_metadata(relative: str) -> None:
    assert_maps_agree_with_mariadb_binlog(corpus_path(relative))
