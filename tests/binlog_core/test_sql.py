"""``binlog_core.sql``: the literal of every column type, the statement of each change, their undo,
and what is refused -- on row changes decoded from the bundled MariaDB binlogs and the corpus.

That each literal reads back as the stored value is shown end to end in ``test_sql_replay``
(scripts applied to real servers); here each is pinned to its exact text.
"""

from __future__ import annotations

import struct
from dataclasses import replace
from pathlib import Path

import pytest

from binlog_core.decoder import RowChange, decode_file
from binlog_core.errors import (
    AmbiguousValueError,
    ColumnNamesUnknownError,
    NonFiniteValueError,
    PartialImageError,
    SqlError,
)
from binlog_core.sql import change_statement, condition, quote_identifier, undo_statements, value_literal
from tests.binlog_core.test_cli import damaged_copy
from tests.fixtures.truth import FIXTURES
from tests.harness.corpus import corpus_path

FULL = FIXTURES / "full"
T_DECIMAL_EVENT = 12312
"""``full`` file 1: the WRITE_ROWS of ``t_decimal``'s limit rows (row 5 is id 6, dbl 123456789.12345679)."""


def changes(path: Path) -> list[RowChange]:
    return [change for item in decode_file(path) for change in item.rows]


def change_at(path: Path, offset: int, row_index: int = 0) -> RowChange:
    return next(c for c in changes(path) if (c.offset, c.row_index) == (offset, row_index))


def refusal(change: RowChange) -> SqlError:
    with pytest.raises(SqlError) as caught:
        change_statement(change)
    return caught.value


# -- literals, by column type --------------------------------------------------------------


def test_integers_at_their_limits_are_decimal_digits_unsigned_ones_read_as_unsigned() -> None:
    assert change_statement(change_at(FULL / "mysql-bin.000001", 9880, 1)) == (
        "INSERT INTO `fixture`.`t_int` (`id`, `ti`, `ti_u`, `si`, `si_u`, `mi`, `mi_u`, `i`, `i_u`, `bi`, `bi_u`, "
        "`nn_i`, `nn_bi_u`) VALUES (2, 127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, "
        "9223372036854775807, 18446744073709551615, 2147483647, 18446744073709551615);"
    )


def test_decimals_keep_their_digits_and_floats_are_the_shortest_text_of_their_float32_or_double() -> None:
    assert change_statement(change_at(FULL / "mysql-bin.000001", T_DECIMAL_EVENT, 1)) == (
        "INSERT INTO `fixture`.`t_decimal` (`id`, `d10_0`, `d5_2`, `d9_4`, `d18_9`, `d38_10`, `d65_30`, `d65_0`, "
        "`d4_4`, `d12_3u`, `f`, `dbl`, `f_nn`, `d_nn`) VALUES (2, -9999999999, -999.99, -99999.9999, "
        "-999999999.999999999, -9999999999999999999999999999.9999999999, "
        "-99999999999999999999999999999999999.999999999999999999999999999999, "
        "-99999999999999999999999999999999999999999999999999999999999999999, -0.9999, 0.000, -3.4028235e+38, "
        "-1.7976931348623157e+308, 1e-45, -99999.999);"
    )


def test_bits_are_bit_literals_as_wide_as_the_column_and_years_are_digits() -> None:
    assert change_statement(change_at(FULL / "mysql-bin.000002", 60815, 1)) == (
        "UPDATE `fixture`.`t_bityear` SET `id` = 3, `b1` = b'1', `b8` = b'10000000', `b13` = b'1000000000000', "
        "`b64` = b'1000000000000000000000000000000000000000000000000000000000000001', `y` = 2155, `b_nn` = b'10000', "
        "`y_nn` = 1901 WHERE `id` = 3;"
    )


def test_temporal_values_with_zero_parts_and_fractions_are_quoted_as_decoded() -> None:
    statement = change_statement(change_at(FULL / "mysql-bin.000001", 18603, 3))
    assert statement.startswith(
        "INSERT INTO `fixture`.`t_temporal` (`id`, `dt`, `t0`, `t1`, `t2`, `t3`, `t4`, `t5`, `t6`, `dtm0`, "
    )
    assert statement.endswith(
        "VALUES (4, '2020-00-15', '-00:00:01', '-00:00:01.5', '-00:00:01.50', '-00:00:01.500', '-00:00:01.5000', "
        "'-00:00:01.50000', '-00:00:01.500000', '2020-00-00 12:34:56', '2020-00-00 12:34:56.5', "
        "'2020-00-00 12:34:56.50', '2020-00-00 12:34:56.500', '2020-00-00 12:34:56.5000', '2020-00-00 12:34:56.50000', "
        "'2020-00-00 12:34:56.500000', '2000-02-29 23:59:59', '2000-02-29 23:59:59.1', '2000-02-29 23:59:59.12', "
        "'2000-02-29 23:59:59.123', '2000-02-29 23:59:59.1234', '2000-02-29 23:59:59.12345', "
        "'2000-02-29 23:59:59.123456', '2020-05-00', '2023-11-14 22:13:44.309', '2023-11-14 22:13:44');"
    )


def test_utf8_text_is_escaped_in_quotes_and_other_charsets_are_their_bytes_after_an_introducer() -> None:
    assert change_statement(change_at(FULL / "mysql-bin.000001", 44302, 1)) == (
        "INSERT INTO `fixture`.`t_string` (`id`, `c10`, `c255`, `vc50`, `vc64`, `vc300`, `tt`, `tx`, `mt`, `lt`, "
        "`c_bin`, `lat_c`, `lat_v`, `lat_t`, `ucs_c`, `ucs_v`, `u16_v`, `u16_t`, `u32_c`, `u3_v`, `vc_nn`) VALUES "
        "(4, '', 'a', 'naïve café', '日本語のテキスト', '한국어 文字', '😀🎉👍🏽', 'mixed ü 日 😀 end', "
        "'quote '' double \" backslash \\\\ done', 'tab\tnewline\\ncr\\r', 'bin0', _latin1 X'FF206174207468652065', "
        "_latin1 X'706C61696E206173636969', _latin1 X'', _ucs2 X'03A9006D006500670061', _ucs2 X'65E5672C', "
        "_utf16 X'006E006100EF00760065002000630061006600E9', _utf16 X'65E5672C8A9E306E30C630AD30B930C8', "
        "_utf32 X'0000D55C0000AD6D0000C5B4', '', 'mixed ü 日 😀 end');"
    )


def test_binary_strings_are_hex_literals_binary_n_padded_to_its_length() -> None:
    assert change_statement(change_at(FULL / "mysql-bin.000001", 122837, 1)) == (
        "INSERT INTO `fixture`.`t_binary` (`id`, `bn8`, `bn1`, `vb64`, `vb300`, `tb`, `b`, `mb`, `lb`, `bn_nn`) "
        "VALUES (5, X'FFFFFFFFFFFFFFFF', X'00', X'007461696C', X'', X'', X'', X'', X'', X'61626364');"
    )


def test_json_of_mariadb_is_text_and_geometry_is_srid_and_wkb_in_hex() -> None:
    assert change_statement(change_at(FULL / "mysql-bin.000001", 130657, 2)) == (
        "INSERT INTO `fixture`.`t_json_geo` (`id`, `j`, `g`, `p`, `ls`, `pg`, `mp`, `mls`, `mpg`, `gc`, `p_srid`) "
        "VALUES (3, '[]', X'00000000010700000000000000', X'00000000010100000000000000000000000000000000000000', "
        "NULL, NULL, NULL, NULL, NULL, X'00000000010700000000000000', NULL);"
    )


def test_enum_and_set_are_their_labels() -> None:
    assert change_statement(change_at(FULL / "mysql-bin.000002", 68553, 2)) == (
        "UPDATE `fixture`.`t_enumset` SET `id` = 3, `e` = 'large', `e_u` = '日本', `e300` = 'v255', `s` = 'x,z', "
        "`s64` = 'm00,m63', `e_nn` = 'on', `s_nn` = 'x' WHERE `id` = 3;"
    )


def test_enum_and_set_without_labels_in_the_file_are_the_index_and_the_bitmask() -> None:
    change = change_at(FIXTURES / "metadata_nolog" / "mysql-bin.000001", 123460, 1)
    columns = change.table_map.columns
    assert change.after is not None
    assert [value_literal(v, c) for v, c in zip(change.after[1:], columns[1:], strict=True)] == [
        "4",
        "5",
        "300",
        "7",
        "18446744073709551615",
        "2",
        "7",
    ]


@pytest.mark.corpus
def test_vector_elements_are_their_float32_bytes_in_hex() -> None:
    change = change_at(corpus_path("rust_mysql_common/vector.binlog"), 1279, 1)
    assert change_statement(change) == (
        "INSERT INTO `dtb`.`bar` (`id`, `vector_column`, `foo`, `vector_column2`) VALUES "
        "(2, X'AE47813FAE4781BF', 'bar', X'0000284200002C420000304200003442');"
    )


@pytest.mark.corpus
def test_mysql_json_is_its_text_and_compared_as_json() -> None:
    change = change_at(corpus_path("rust_mysql_common/json-opaque.binlog"), 1428)
    assert change_statement(change) == "INSERT INTO `foo`.`test` (`a`) VALUES ('{\"e\": [0, 1, true, false]}');"
    assert undo_statements([change]) == [
        "DELETE FROM `foo`.`test` WHERE `a` <=> CAST('{\"e\": [0, 1, true, false]}' AS JSON) LIMIT 1;"
    ]


@pytest.mark.corpus
@pytest.mark.parametrize(("offset", "text"), [(846, '{"b": "2012-03-18"}'), (1312, '{"e": 9.00}')])
def test_mysql_json_holding_a_date_or_decimal_value_is_refused_as_its_text_would_read_back_as_other_types(
    offset: int, text: str
) -> None:
    change = change_at(corpus_path("rust_mysql_common/json-opaque.binlog"), offset)
    assert change.after == (text,)
    problem = refusal(change)
    assert isinstance(problem, AmbiguousValueError)
    assert problem.message == (
        f"after image: the JSON document {text!r} holds MySQL opaque values (DATE, TIME, DATETIME, DECIMAL or "
        "another column type stored as JSON); its text reads back as strings and doubles, not those values"
    )


def test_text_that_did_not_decode_in_its_charset_is_its_bytes_after_the_charset_introducer(tmp_path: Path) -> None:
    # t_string row id 4: vc50 'naïve café' (after c255 'a', its length byte 12 in front) gets an invalid UTF-8
    # byte pair for 'é'
    old = b"a\x0c" + "naïve café".encode()
    path = damaged_copy(FULL / "mysql-bin.000001", 44302, old, old[:-2] + b"\xff\xfe", tmp_path)
    change = change_at(path, 44302, 1)
    assert change.after is not None
    assert value_literal(change.after[3], change.table_map.columns[3]) == "_utf8mb4 X'6E61C3AF766520636166FFFE'"


def test_text_of_a_column_the_file_names_no_charset_for_is_the_bytes_it_decoded_from() -> None:
    change = change_at(FIXTURES / "metadata_nolog" / "mysql-bin.000001", 43563, 1)
    assert change.after is not None
    assert (change.after[3], value_literal(change.after[3], change.table_map.columns[3])) == (
        "naïve café",
        "X'6E61C3AF766520636166C3A9'",
    )


def test_null_is_null_and_is_null_in_a_where() -> None:
    change = change_at(FULL / "mysql-bin.000001", 46456)
    column = change.table_map.columns[1]
    assert (value_literal(None, column), condition(column, None, key=False)) == ("NULL", "`c10` IS NULL")


def test_identifiers_double_their_backticks() -> None:
    assert quote_identifier("we`ird name") == "`we``ird name`"


# -- which row ------------------------------------------------------------------------------


def test_rows_of_a_table_with_a_primary_key_are_found_by_it() -> None:
    assert change_statement(change_at(FULL / "mysql-bin.000002", 73997)) == (
        "DELETE FROM `fixture`.`t_enumset` WHERE `id` = 99;"
    )


def test_rows_of_a_table_without_primary_key_are_found_by_every_column_bytewise_with_limit_1() -> None:
    assert change_statement(change_at(FULL / "mysql-bin.000004", 9004)) == (
        "DELETE FROM `fixture`.`t_nopk` WHERE `a` <=> 3 AND `b` IS NULL AND CAST(`c` AS BINARY) <=> 'third' LIMIT 1;"
    )


def test_a_float_compares_as_the_double_it_widens_to() -> None:
    change = change_at(FULL / "mysql-bin.000001", T_DECIMAL_EVENT, 1)
    assert change.after is not None
    column = change.table_map.columns[10]
    assert (column.name, condition(column, change.after[10], key=False)) == ("f", "`f` <=> -3.4028234663852886e+38")


def test_a_char_of_unknown_charset_shorter_than_the_column_cannot_be_compared_exactly() -> None:
    # t_string id 3: c10 CHAR(10) holds 'ab' (a BINARY(10) would hold 'ab' and eight zero bytes)
    change = change_at(FIXTURES / "metadata_nolog" / "mysql-bin.000001", 43563)
    assert change.after is not None
    column = replace(change.table_map.columns[1], name="c10")
    assert (column.type_name, column.collation, change.after[1]) == ("STRING", None, "ab")
    with pytest.raises(AmbiguousValueError, match="the file does not say whether the column is CHAR or BINARY"):
        condition(column, change.after[1], key=False)


# -- refusals -------------------------------------------------------------------------------


def test_nan_and_infinity_have_no_literal(tmp_path: Path) -> None:
    nan = bytes.fromhex("000000000000f87f")
    path = damaged_copy(
        FULL / "mysql-bin.000001", T_DECIMAL_EVENT, struct.pack("<d", 123456789.12345679), nan, tmp_path
    )
    problem = refusal(change_at(path, T_DECIMAL_EVENT, 5))
    assert isinstance(problem, NonFiniteValueError)
    assert str(problem) == (
        "mysql-bin.000001@12312 WRITE_ROWS_V1 -> row 5 -> col 12 dbl: after image: nan has no SQL literal "
        "(MySQL never stores it: the value is damaged) [NON_FINITE_VALUE]"
    )


def test_a_negative_integer_of_a_column_of_unknown_signedness_is_ambiguous() -> None:
    change = change_at(FIXTURES / "metadata_nolog" / "mysql-bin.000001", 9817, 1)
    assert change.after is not None
    with pytest.raises(AmbiguousValueError) as caught:
        value_literal(change.after[2], change.table_map.columns[2])
    assert caught.value.message == (
        "the value -1 reads as negative, but the file does not say whether the column is unsigned "
        "(binlog_row_metadata=FULL does): it may be 255"
    )


def test_a_table_map_without_column_names_is_refused_naming_the_file_offset_row_and_column() -> None:
    problem = refusal(change_at(FIXTURES / "metadata_nolog" / "mysql-bin.000001", 9817, 1))
    assert isinstance(problem, ColumnNamesUnknownError)
    assert str(problem) == (
        "mysql-bin.000001@9817 WRITE_ROWS_V1 -> row 1 -> col 1 @1: after image: the TABLE_MAP carries no column "
        "names (the server wrote binlog_row_metadata=MINIMAL or NO_LOG; FULL writes them) and none are known for "
        "the table from earlier in the files [COLUMN_NAMES_UNKNOWN]"
    )


def test_an_insert_image_without_every_column_is_refused_naming_the_absent_columns() -> None:
    problem = refusal(change_at(FIXTURES / "minimal_image" / "mysql-bin.000001", 10347))
    assert isinstance(problem, PartialImageError)
    assert problem.message == (
        "after image: ti, ti_u, si, si_u, mi, mi_u, i, i_u, bi, bi_u, nn_i, nn_bi_u are not in the image; the server "
        "gave them values (their defaults) that the binlog does not hold"
    )


def test_an_update_image_without_every_column_is_refused_as_it_does_not_prove_the_rest_unchanged() -> None:
    minimal = [c for c in changes(FIXTURES / "minimal_image" / "mysql-bin.000002") if c.op == "update"]
    problem = refusal(minimal[0])
    assert (problem.code, problem.message) == (
        "PARTIAL_IMAGE",
        "after image: id, ti_u, si, si_u, mi, mi_u, i, i_u, bi, bi_u, nn_i, nn_bi_u are not in the image; nothing says "
        "they kept their values (a REPLACE the server runs as an update resets columns without logging them)",
    )


def test_a_delete_with_a_minimal_image_is_found_by_the_key_it_holds() -> None:
    minimal = [c for c in changes(FIXTURES / "minimal_image" / "mysql-bin.000002") if c.op == "delete"]
    assert change_statement(minimal[0]) == "DELETE FROM `fixture`.`t_int` WHERE `id` = 3;"


# -- undo -----------------------------------------------------------------------------------


def test_undo_reverses_the_changes_newest_first_insert_to_delete_update_back_delete_to_insert() -> None:
    file4 = changes(FULL / "mysql-bin.000004")
    transaction = [c for c in file4 if c.offset in (1198, 8428, 8740)]
    assert [(c.op, c.table, c.row_index) for c in transaction] == [
        ("update", "t_string", 0),
        ("update", "t_nopk", 0),
        ("update", "t_nopk", 1),
        ("delete", "t_nopk", 0),
    ]
    undone = undo_statements(transaction)
    assert undone[:3] == [
        "INSERT INTO `fixture`.`t_nopk` (`a`, `b`, `c`) VALUES (1, 'one', 'changed');",
        "UPDATE `fixture`.`t_nopk` SET `a` = 1, `b` = 'one', `c` = 'x' WHERE `a` <=> 1 AND CAST(`b` AS BINARY) <=> "
        "'one' AND CAST(`c` AS BINARY) <=> 'changed' LIMIT 1;",
        "UPDATE `fixture`.`t_nopk` SET `a` = 1, `b` = 'one', `c` = 'x' WHERE `a` <=> 1 AND CAST(`b` AS BINARY) <=> "
        "'one' AND CAST(`c` AS BINARY) <=> 'changed' LIMIT 1;",
    ]
    assert undone[3].startswith("UPDATE `fixture`.`t_string` SET `id` = 4, `c10` = 'x', `c255` = 'a', ")
    assert undone[3].endswith(" WHERE `id` = 4;")
    assert "`vc64` = '日本語のテキスト'" in undone[3]


def test_undo_of_an_insert_deletes_it_by_key() -> None:
    assert undo_statements([change_at(FULL / "mysql-bin.000001", 9880, 1)]) == [
        "DELETE FROM `fixture`.`t_int` WHERE `id` = 2;"
    ]


def test_undo_of_a_delete_with_a_minimal_image_is_refused_naming_the_absent_columns() -> None:
    minimal = [c for c in changes(FIXTURES / "minimal_image" / "mysql-bin.000002") if c.op == "delete"]
    with pytest.raises(PartialImageError) as caught:
        undo_statements(minimal[:1])
    assert str(caught.value) == (
        "mysql-bin.000002@64236 DELETE_ROWS_V1 -> row 0: before image: ti, ti_u, si, si_u, mi, mi_u, i, i_u, bi, bi_u, "
        "nn_i, nn_bi_u are not in the image; the deleted row cannot be inserted back [PARTIAL_IMAGE]"
    )
