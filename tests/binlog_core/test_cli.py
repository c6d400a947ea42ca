"""``binlog-dump``: the JSON lines it prints, the problem lines, the exit status, the entry points.

The CLI runs in-process (``main(argv)`` with pytest's captured stdout/stderr); only the two entry
points (``binlog-dump`` and ``python -m binlog_core``) start a process.  Inputs are real binlogs:
the checked-in MariaDB fixtures and files of the shared corpus, some with a value overwritten.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from binlog_core.cli import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, EXIT_WARNINGS, main
from binlog_core.framing import open_events
from tests.binlog_core.real_events import file_bytes, pick_events, with_body, with_checksum
from tests.fixtures.truth import FIXTURES, load_variant
from tests.harness.corpus import corpus_files, corpus_path

ROOT = Path(__file__).resolve().parents[2]
FULL_1 = FIXTURES / "full" / "mysql-bin.000001"

MYSQL_57 = "mysql-cdc-rs/5.7/30_write_rows_v2/log.bin"
"""MySQL 5.7.30, no column names in its TABLE_MAPs: one INSERT of (1, 'abcde')."""
COMPRESSED = "mysql-binlog-connector-java/mysql-bin.compressed"
"""MySQL 8.0.28: one zstd TRANSACTION_PAYLOAD at 236 after an ANONYMOUS_GTID."""
COMPRESSED_GTID = "mysql-binlog-connector-rust/mysql-bin.000057"
"""MySQL 8.0.31: TRANSACTION_PAYLOADs, each after a GTID event."""
TAGGED = "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001"
"""MySQL 9.6: GTID_TAGGED events (``uuid:tag:seq``)."""
PARTIAL_JSON = "rust_mysql_common/json.binlog.000001"
"""MySQL 8.0.22: PARTIAL_UPDATE_ROWS of JSON columns."""
TRUNCATED = "mariadb-test-data/std_data/bug11747416_32228_binlog.000001"
"""PROVENANCE.md: deliberately cut; the WRITE_ROWS_V1 at 316 declares 65567 bytes."""


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, list[dict[str, Any]], list[str]]:
    """``binlog-dump ARGV`` in-process: (exit status, stdout parsed line by line, stderr lines)."""
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, [strict_json(line) for line in out.splitlines()], err.splitlines()


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(line: str) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity``."""
    return json.loads(line, parse_constant=reject_constant)


def damaged_copy(path: Path, offset: int, old: bytes, new: bytes, out_dir: Path) -> Path:
    """A copy of ``path`` whose event at ``offset`` has its one occurrence of ``old`` replaced by
    ``new``, with the CRC32 recomputed (as a server would have written the damaged bytes)."""
    event = next(e for e in pick_events("cli", (path,), every=True) if e.offset == offset)
    data = bytearray(file_bytes(path))
    region = bytes(data[event.offset : event.end])
    assert region.count(old) == 1, f"{old.hex()} is not unique in the event at {offset}"
    at = event.offset + region.index(old)
    data[at : at + len(old)] = new
    if event.checksummed:
        with_checksum(event, data)
    copy = out_dir / path.name
    copy.write_bytes(bytes(data))
    return copy


# --- row-change lines ------------------------------------------------------------------------


def test_row_change_line_of_a_mariadb_file_carries_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    status, records, err = run(capsys, FULL_1)
    assert (status, err) == (EXIT_OK, [])
    assert records[0] == {
        "file": "mysql-bin.000001",
        "offset": 9880,
        "inner_index": None,
        "row_index": 0,
        "event_type": "WRITE_ROWS_V1",
        "gtid": "0-1-17",
        "timestamp": 1700000018,
        "server_id": 1,
        "schema": "fixture",
        "table": "t_int",
        "table_id": 18,
        "op": "insert",
        "before": None,
        "after": {
            "id": 1,
            "ti": -128,
            "ti_u": 0,
            "si": -32768,
            "si_u": 0,
            "mi": -8388608,
            "mi_u": 0,
            "i": -2147483648,
            "i_u": 0,
            "bi": -9223372036854775808,
            "bi_u": 0,
            "nn_i": -2147483648,
            "nn_bi_u": 0,
        },
    }
    # rows of one event share its coordinates; row_index counts them
    assert [(r["offset"], r["row_index"], r["gtid"]) for r in records[:4]] == [
        (9880, 0, "0-1-17"),
        (9880, 1, "0-1-17"),
        (9880, 2, "0-1-17"),
        (10347, 0, "0-1-18"),
    ]


def test_row_change_values_of_a_mariadb_file_equal_the_values_the_server_stored(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, records, _err = run(capsys, FULL_1)
    truth = [c for c in load_variant("full").changes if c.file == FULL_1.name]
    assert status == EXIT_OK
    assert len(records) == len(truth) == 61
    floats = {(c.shape.table, col.name) for c in truth for col in c.shape.columns if col.data_type == "float"}
    assert floats == {("t_decimal", "f"), ("t_decimal", "f_nn")}
    for record, change in zip(records, truth, strict=True):
        assert (record["schema"], record["table"], record["op"]) == (change.shape.schema, change.shape.table, change.op)
        for side in ("before", "after"):
            got, want = record[side], getattr(change, side)
            if change.shape.table == "t_decimal" and want is not None:
                # expected.jsonl holds FLOAT widened to double; the CLI the shortest text of the same float32
                want = {k: v for k, v in want.items() if k not in ("f", "f_nn")}
                got = {k: v for k, v in got.items() if k not in ("f", "f_nn")}
            assert got == want, f"seq {change.seq} {side}"
    t_decimal = [(r["after"]["f"], r["after"]["f_nn"]) for r in records if r["table"] == "t_decimal"]
    assert t_decimal == [
        (3.4028235e38, 0.0),
        (-3.4028235e38, 1e-45),
        (0.0, 0.0),
        (1.1754944e-38, 16777216.0),
        (0.1, 3.1415927),
        (-1.5, 0.1),
        (None, 2.0),
        (None, 0.5),
        (None, -0.5),
        (None, 1.5),
    ]
    # the same float32 values as the truth's widened doubles
    as_f32 = struct.Struct("<f").pack
    for record, change in zip(records, truth, strict=True):
        if change.shape.table == "t_decimal" and change.after is not None:
            for name in ("f", "f_nn"):
                if change.after[name] is not None:
                    assert as_f32(record["after"][name]) == as_f32(change.after[name]), f"seq {change.seq} {name}"


@pytest.mark.corpus
def test_row_change_inside_a_compressed_transaction_has_the_payload_offset_and_its_inner_index(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, records, err = run(capsys, corpus_path(COMPRESSED))
    assert (status, err, len(records)) == (EXIT_OK, [], 1)
    record = records[0]
    assert {k: v for k, v in record.items() if k not in ("before", "after")} == {
        "file": "mysql-bin.compressed",
        "offset": 236,  # the TRANSACTION_PAYLOAD
        "inner_index": 2,  # BEGIN, TABLE_MAP, this UPDATE_ROWS
        "row_index": 0,
        "event_type": "UPDATE_ROWS",
        "gtid": None,  # ANONYMOUS_GTID
        "timestamp": 1646406641,
        "server_id": 223344,
        "schema": "demo",
        "table": "movies",
        "table_id": 84,
        "op": "update",
    }
    assert (record["before"]["@5"], record["after"]["@5"]) == ("Western", "Western|Action")
    assert {k: v for k, v in record["before"].items() if k != "@5"} == {
        k: v for k, v in record["after"].items() if k != "@5"
    }


@pytest.mark.corpus
def test_row_change_inside_a_compressed_transaction_carries_the_mysql_gtid_before_the_payload(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, records, err = run(capsys, corpus_path(COMPRESSED_GTID))
    assert (status, err) == (EXIT_OK, [])
    assert records[0] == {
        "file": "mysql-bin.000057",
        "offset": 457,
        "inner_index": 3,
        "row_index": 0,
        "event_type": "WRITE_ROWS",
        "gtid": "76f3e7be-6720-11ed-9cad-0242ac110002:12",
        "timestamp": 1668952358,
        "server_id": 1,
        "schema": "a",
        "table": "b",
        "table_id": 92,
        "op": "insert",
        "before": None,
        "after": {"@1": 1},
    }
    assert [(r["offset"], r["inner_index"], r["gtid"]) for r in records[1:3]] == [
        (730, 3, "76f3e7be-6720-11ed-9cad-0242ac110002:13"),
        (730, 6, "76f3e7be-6720-11ed-9cad-0242ac110002:13"),
    ]


@pytest.mark.corpus
def test_row_change_of_a_file_without_column_names_keys_values_by_position(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, records, err = run(capsys, corpus_path(MYSQL_57))
    assert (status, err) == (EXIT_OK, [])
    # mariadb-binlog -vv: INSERT INTO `default`.`boxercrab` SET @1=1 @2='abcde'
    assert records == [
        {
            "file": "log.bin",
            "offset": 934,
            "inner_index": None,
            "row_index": 0,
            "event_type": "WRITE_ROWS",
            "gtid": "80549ecc-d2f2-11ea-b790-0242ac130002:3",
            "timestamp": 1596179173,
            "server_id": 1,
            "schema": "default",
            "table": "boxercrab",
            "table_id": 111,
            "op": "insert",
            "before": None,
            "after": {"@1": 1, "@2": "abcde"},
        }
    ]


@pytest.mark.corpus
def test_row_change_of_a_tagged_gtid_transaction_carries_uuid_tag_and_sequence(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, records, err = run(capsys, corpus_path(TAGGED))
    assert (status, err) == (EXIT_OK, [])
    assert records[0] == {
        "file": "binlog_transaction_with_GTID_TAG.000001",
        "offset": 461,
        "inner_index": None,
        "row_index": 0,
        "event_type": "WRITE_ROWS",
        "gtid": "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3",
        "timestamp": 1770368687,
        "server_id": 1,
        "schema": "test",
        "table": "orders",
        "table_id": 90,
        "op": "insert",
        "before": None,
        "after": {"@1": 3, "@2": 100, "@3": "250.00"},
    }


@pytest.mark.corpus
def test_partially_updated_json_column_prints_as_a_json_diffs_object_not_a_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, records, err = run(capsys, corpus_path(PARTIAL_JSON))
    assert (status, err) == (EXIT_OK, [])
    partial = [r for r in records if r["event_type"] == "PARTIAL_UPDATE_ROWS"]
    assert [(r["offset"], r["row_index"], r["before"], r["after"]) for r in partial] == [
        (3750, i, {"@1": i + 1}, {"@2": {"json_diffs": [{"op": "REPLACE", "path": "$.age", "value": age}]}, **rest})
        for i, (age, rest) in enumerate(
            [
                ("26", {"@3": "Joe", "@4": 26}),
                ("34", {"@3": "Sue", "@4": 34}),
                ("42", {"@3": "Pete", "@4": 42}),
            ]
            * 2
        )
    ]
    # whole JSON documents elsewhere in the file stay strings
    documents = [v for r in records for image in (r["before"], r["after"]) if image for v in image.values()]
    assert any(isinstance(v, str) and v.startswith("{") for v in documents)


# --- --events ----------------------------------------------------------------------------------


@pytest.mark.corpus
def test_events_prints_one_object_per_event_with_header_fields_and_decoded_body(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, records, err = run(capsys, "--events", corpus_path(MYSQL_57))
    assert (status, err) == (EXIT_OK, [])
    header = ("offset", "inner_index", "event_type", "type_code", "timestamp", "server_id", "event_size", "log_pos")
    assert [tuple(r[k] for k in header) for r in records] == [
        (4, None, "FORMAT_DESCRIPTION", 15, 1596179173, 1, 119, 123),
        (123, None, "PREVIOUS_GTIDS", 35, 1596179173, 1, 31, 154),
        (154, None, "GTID", 33, 1596179173, 1, 65, 219),
        (219, None, "QUERY", 2, 1596179173, 1, 138, 357),
        (357, None, "GTID", 33, 1596179173, 1, 65, 422),
        (422, None, "QUERY", 2, 1596179173, 1, 240, 662),
        (662, None, "GTID", 33, 1596179173, 1, 65, 727),
        (727, None, "QUERY", 2, 1596179173, 1, 75, 802),
        (802, None, "ROWS_QUERY", 29, 1596179173, 1, 74, 876),
        (876, None, "TABLE_MAP", 19, 1596179173, 1, 58, 934),
        (934, None, "WRITE_ROWS", 30, 1596179173, 1, 46, 980),
        (980, None, "XID", 16, 1596179173, 1, 31, 1011),
        (1011, None, "ROTATE", 4, 1596179173, 1, 47, 1058),
    ]
    assert all(r["file"] == "log.bin" and r["checksum_ok"] is True for r in records)
    by_offset = {r["offset"]: r for r in records}
    assert by_offset[4]["body"]["server_version"] == "5.7.30-log"
    assert by_offset[662]["body"]["gtid"] == "80549ecc-d2f2-11ea-b790-0242ac130002:3"
    assert by_offset[727]["body"]["statement"] == "BEGIN"
    assert by_offset[802]["body"]["statement"] == "INSERT INTO `boxercrab` (`title`) VALUES ('abcde')"
    table_map = by_offset[876]["body"]
    assert (table_map["table_id"], table_map["schema"], table_map["table"]) == (111, "default", "boxercrab")
    assert [(c["type"], c["meta"]) for c in table_map["columns"]] == [(3, 0), (15, 160)]  # INT, VARCHAR(160 bytes)
    assert by_offset[934]["body"] == {"table_id": 111, "flags": 1, "extra": [], "num_columns": 2}
    assert by_offset[934]["rows"] == [{"before": None, "after": {"@1": 1, "@2": "abcde"}}]
    assert by_offset[980]["body"] == {"xid": 37}
    assert by_offset[1011]["body"] == {"position": 4, "next_file": "mysql_bin.000002"}


@pytest.mark.corpus
@pytest.mark.parametrize("relative", corpus_files())
def test_every_corpus_file_prints_strict_json_in_both_modes(relative: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = corpus_path(relative)
    for mode in ((), ("--events",)):
        status, _records, err = run(capsys, *mode, path)  # run() parses every line strictly
        assert status in (EXIT_OK, EXIT_ERRORS, EXIT_WARNINGS)
        assert (status == EXIT_OK) == (err == [])
        assert all(line.split("\t", 1)[0] == path.name for line in err)


# --- problems and exit status ------------------------------------------------------------------


@pytest.mark.corpus
def test_corrupt_file_prints_everything_before_the_damage_and_one_problem_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, records, err = run(capsys, "--events", corpus_path(TRUNCATED))
    assert status == EXIT_ERRORS
    assert err == [
        "bug11747416_32228_binlog.000001\t316\tTRUNCATED\t"
        "WRITE_ROWS_V1: event declares 65567 bytes, the file has 7876 left"
    ]
    assert [(r["offset"], r["event_type"]) for r in records] == [
        (4, "FORMAT_DESCRIPTION"),
        (107, "QUERY"),
        (207, "QUERY"),
        (275, "TABLE_MAP"),
    ]


@pytest.mark.corpus
def test_damaged_compressed_transaction_is_one_problem_line_and_the_transactions_after_it_print(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the first payload (457) with the middle one of its 161 zstd bytes overwritten, CRC32 recomputed
    path = corpus_path(COMPRESSED_GTID)
    payload = file_bytes(path)[457 + 19 + 10 : 457 + 19 + 10 + 161]
    middle = payload[80:84]
    copy = damaged_copy(path, 457, middle, b"\xff" + middle[1:], tmp_path)
    status, records, err = run(capsys, copy)
    assert status == EXIT_ERRORS
    assert err == [
        "mysql-bin.000057\t457\tDECOMPRESSION_FAILED\t"
        "TRANSACTION_PAYLOAD: zstd: zstd decompress error: Data corruption detected"
    ]
    _, whole, _ = run(capsys, path)
    assert [(r["offset"], r["inner_index"]) for r in whole] == [(457, 3), (730, 3), (730, 6)]
    assert records == whole[1:]  # the next transaction's row changes, every field as in the real file


@pytest.mark.corpus
def test_problem_lines_are_file_offset_code_and_located_message_separated_by_tabs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _records, err = run(capsys, corpus_path("mariadb-test-data/suite/binlog/std_data/invalid_row_v2_tag.001"))
    assert status == EXIT_ERRORS
    assert [line.split("\t")[:3] for line in err] == [
        ["invalid_row_v2_tag.001", "256", "MALFORMED"],
        ["invalid_row_v2_tag.001", "287", "MALFORMED"],
        ["invalid_row_v2_tag.001", "320", "MALFORMED"],
    ]
    assert all(len(line.split("\t")) == 4 and line.split("\t")[3].startswith("WRITE_ROWS") for line in err)


@pytest.mark.corpus
def test_warnings_only_exit_with_status_3(capsys: pytest.CaptureFixture[str]) -> None:
    status, _records, err = run(capsys, corpus_path("mysql-binlog-connector-java/mysql-bin.aurora-padding"))
    assert status == EXIT_WARNINGS
    assert [line.split("\t")[:3] for line in err] == [["mysql-bin.aurora-padding", "281", "UNKNOWN_EVENT_TYPE"]]


def test_unknown_optional_metadata_field_is_a_warning_line_and_the_rows_still_print(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # fixture.t_enumset's first TABLE_MAP (124358) with a field of type 14 appended, as a newer
    # server would add one ({type u8 | len packed | value}); its size and CRC32 rewritten
    at = 124358
    event = next(e for e in pick_events("cli", (FULL_1,), every=True) if e.offset == at)
    original = next(e for e in open_events(FULL_1) if e.offset == at)
    copy = tmp_path / FULL_1.name
    copy.write_bytes(with_body(file_bytes(FULL_1), event, original.body + b"\x0e\x01\x07"))
    status, records, err = run(capsys, copy)
    assert status == EXIT_WARNINGS
    assert err == [
        "mysql-bin.000001\t124358\tUNKNOWN_OPTIONAL_METADATA\t"
        "TABLE_MAP -> optional metadata 14: optional metadata field type 14 (1 bytes) is unknown; kept raw"
    ]
    _, expected, _ = run(capsys, FULL_1)
    assert [(r["table"], r["after"]) for r in records] == [(r["table"], r["after"]) for r in expected]


def test_missing_file_is_one_io_error_line_with_its_base_name_and_no_offset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "gone" / "mysql-bin.000009"
    status, records, err = run(capsys, missing, FULL_1)
    assert status == EXIT_ERRORS
    assert err == ["mysql-bin.000009\t\tIO_ERROR\tNo such file or directory"]
    assert len(records) == 61  # the next file is still decoded


def test_unknown_default_charset_is_a_usage_error_before_any_output(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--default-charset", "bogus", str(FULL_1)])
    out, err = capsys.readouterr()
    assert exit_info.value.code == EXIT_USAGE
    assert out == ""
    assert err.splitlines()[-1] == (
        "binlog-dump: error: argument --default-charset: unknown charset 'bogus': "
        "give a MySQL charset (utf8mb4, latin1, cp1251, ...), a Python text codec, or 'none'"
    )


def test_default_charset_of_a_mysql_charset_without_python_codec_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--default-charset", "dec8", str(FULL_1)])
    assert exit_info.value.code == EXIT_USAGE
    assert "MySQL charset 'dec8' has no Python codec" in capsys.readouterr().err


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("charset", "title"),
    [("utf-8", "abcde"), ("latin1", "abcde"), ("utf8mb4", "abcde"), ("none", "hex:6162636465")],
)
def test_default_charset_decodes_text_of_files_that_name_no_charset(
    charset: str, title: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, records, err = run(capsys, "--default-charset", charset, corpus_path(MYSQL_57))
    assert (status, err) == (EXIT_OK, [])
    assert records[0]["after"] == {"@1": 1, "@2": title}


@pytest.mark.corpus
def test_default_charset_the_text_does_not_decode_in_prints_hex_with_a_warning_and_exits_3(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # MySQL's utf16 is UTF-16 big-endian: the 5 bytes of 'abcde' are no UTF-16 text
    status, records, err = run(capsys, "--default-charset", "utf16", corpus_path(MYSQL_57))
    assert status == EXIT_WARNINGS
    assert records[0]["after"] == {"@1": 1, "@2": "hex:6162636465"}
    assert err == [
        "log.bin\t934\tUNDECODABLE_TEXT\tWRITE_ROWS -> col 2 @2: bytes not decodable as utf-16-be, the default "
        "charset (the file names none for the column: it may be binary); kept as bytes"
    ]


# --- damaged values: NaN and infinities ---------------------------------------------------------

T_DECIMAL_EVENT = 12312
"""The WRITE_ROWS_V1 of ``fixture.t_decimal``'s limit rows in full/mysql-bin.000001."""


def test_nan_in_a_double_column_prints_as_a_string_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # row 5 (id 6) holds dbl = 123456789.12345679; a quiet NaN's bits replace it
    nan = bytes.fromhex("000000000000f87f")
    path = damaged_copy(FULL_1, T_DECIMAL_EVENT, struct.pack("<d", 123456789.12345679), nan, tmp_path)
    status, records, err = run(capsys, path)
    assert status == EXIT_WARNINGS
    assert err == [
        "mysql-bin.000001\t12312\tNON_FINITE_FLOAT\tWRITE_ROWS_V1 -> row 5 -> col 12 dbl: the after image holds NaN, "
        "which MySQL never stores (damaged value); printed as 'NaN'"
    ]
    row = next(r for r in records if r["offset"] == T_DECIMAL_EVENT and r["row_index"] == 5)
    assert (row["after"]["id"], row["after"]["f"], row["after"]["dbl"], row["after"]["f_nn"]) == (6, -1.5, "NaN", 0.1)
    assert len(records) == 61


def test_infinity_in_a_float_column_prints_as_a_string_with_a_warning_in_events_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # row 1 (id 2) holds f = -3.4028235e+38 (the lowest float32); -infinity's bits replace it
    lowest = struct.pack("<f", -3.4028234663852886e38)
    path = damaged_copy(FULL_1, T_DECIMAL_EVENT, lowest, struct.pack("<f", float("-inf")), tmp_path)
    status, records, err = run(capsys, "--events", path)
    assert status == EXIT_WARNINGS
    assert err == [
        "mysql-bin.000001\t12312\tNON_FINITE_FLOAT\tWRITE_ROWS_V1 -> row 1 -> col 11 f: the after image holds "
        "-Infinity, which MySQL never stores (damaged value); printed as '-Infinity'"
    ]
    event = next(r for r in records if r["offset"] == T_DECIMAL_EVENT)
    assert [row["after"]["f"] for row in event["rows"][:3]] == [3.4028235e38, "-Infinity", 0.0]


@pytest.mark.corpus
def test_infinity_in_a_vector_element_prints_as_a_string_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # MySQL 9 vector.binlog: the WRITE_ROWS at 1085 inserts [1.1, 2.2, 3.3]; element 1 becomes +infinity
    source = corpus_path("rust_mysql_common/vector.binlog")
    path = damaged_copy(source, 1085, struct.pack("<f", 2.2), struct.pack("<f", float("inf")), tmp_path)
    status, records, err = run(capsys, path)
    assert status == EXIT_WARNINGS
    assert err == [
        "vector.binlog\t1085\tNON_FINITE_FLOAT\tWRITE_ROWS -> row 0 -> col 2 vector_column -> element 1: the after "
        "image holds Infinity in a VECTOR, which MySQL never stores (damaged value); printed as 'Infinity'"
    ]
    assert records[0]["after"] == {"id": 1, "vector_column": [1.1, "Infinity", 3.3]}


# --- entry points ------------------------------------------------------------------------------


def _entry_point(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT, env=env, timeout=120)


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "binlog_core"],
        [str(Path(sys.executable).parent / "binlog-dump")],
    ],
    ids=["python -m binlog_core", "binlog-dump"],
)
def test_entry_points_print_what_main_prints(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    missing = "/nonexistent/mysql-bin.000404"
    in_process = main([str(FULL_1), missing])
    out, err = capsys.readouterr()
    result = _entry_point([*command, str(FULL_1), missing])
    assert (result.returncode, result.stdout, result.stderr) == (in_process, out, err)
    assert in_process == EXIT_ERRORS and out.count("\n") == 61


def test_nan_in_an_event_body_prints_as_a_string_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the MariaDB 10.11 misc file: USER_VAR @r at 883 holds the REAL 0.0025; a NaN's bits replace it
    source = Path(__file__).resolve().parent / "events" / "data" / "mariadb-10.11-misc.binlog"
    nan = bytes.fromhex("000000000000f87f")
    path = damaged_copy(source, 883, struct.pack("<d", 0.0025), nan, tmp_path)
    status, records, err = run(capsys, "--events", path)
    assert status == EXIT_WARNINGS
    assert err == [
        "mariadb-10.11-misc.binlog\t883\tNON_FINITE_FLOAT\tUSER_VAR -> value: the field holds NaN, "
        "which MySQL never writes; printed as 'NaN'"
    ]
    body = next(r["body"] for r in records if r["offset"] == 883)
    assert (body["name"], body["value"]) == ("r", "NaN")


# --- selection, SQL output, verbosity, the result file ----------------------------------------

MISC = Path(__file__).resolve().parent / "events" / "data" / "mariadb-10.11-misc.binlog"
"""MariaDB 10.11, statement-based: user variables before INSERTs, then LOAD DATA (BEGIN_LOAD_QUERY at 1449)."""


def test_result_file_receives_the_output_and_stdout_stays_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "rows.jsonl"
    status = main(["--result-file", str(target), "--table", "t_nopk", str(FIXTURES / "full" / "mysql-bin.000004")])
    assert (status, capsys.readouterr()) == (EXIT_OK, ("", ""))
    records = [strict_json(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [(r["op"], r["after"]) for r in records[:2]] == [
        ("insert", {"a": 1, "b": "one", "c": "x"}),
        ("insert", {"a": 2, "b": "two", "c": None}),
    ]
    assert {r["table"] for r in records} == {"t_nopk"}
    assert len(records) == 8


def test_database_of_no_table_selects_no_row_and_is_no_problem(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "-d", "other", FULL_1) == (EXIT_OK, [], [])


def test_verbose_adds_each_rows_statement_and_very_verbose_its_columns(capsys: pytest.CaptureFixture[str]) -> None:
    status, records, _err = run(capsys, "-v", "--table", "t_nopk", FIXTURES / "full" / "mysql-bin.000004")
    assert status == EXIT_OK
    assert records[0]["statement"] == (
        "INSERT INTO `fixture`.`t_nopk` (`a`, `b`, `c`) VALUES (1, 'one', 'x'), (2, 'two', NULL), (1, 'one', 'x'), "
        "(3, NULL, 'third')"
    )
    assert "columns" not in records[0]
    status, records, _err = run(capsys, "-vv", "--table", "t_nopk", FIXTURES / "full" / "mysql-bin.000004")
    assert records[0]["columns"] == [
        {"name": "a", "type": "LONG", "meta": 0, "nullable": True, "unsigned": False},
        {"name": "b", "type": "VARCHAR", "meta": 80, "nullable": True, "unsigned": None},
        {"name": "c", "type": "BLOB", "meta": 2, "nullable": True, "unsigned": None},
    ]


def test_sql_of_a_statement_based_binlog_sets_its_user_variables_and_stops_at_load_data(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = main(["--rows-as", "sql", str(MISC)])
    out, err = capsys.readouterr()
    assert status == EXIT_ERRORS
    assert err.splitlines() == [
        "mariadb-10.11-misc.binlog\t1449\tUNREPLAYABLE_EVENT\tBEGIN_LOAD_QUERY: BEGIN_LOAD_QUERY cannot be replayed "
        "from the binlog alone (LOAD DATA needs the data file)"
    ]
    assert (
        out.splitlines()[-20:]
        == [
            "-- GTID 0-7-3",
            "BEGIN;",
            "SET @@session.collation_connection=8;",
            "SET @`s`:=_utf8mb4 X'68C3A96C6C6FF09F9880' COLLATE `utf8mb4_general_ci`;",
            "SET @`d`:=-1234.567;",
            "SET @`r`:=0.0025;",
            "SET @`u`:=18446744073709551615;",
            "INSERT INTO t VALUES (1, @s, @d, @r, @u);",
            "COMMIT; -- xid=117",
            "-- GTID 0-7-4",
            "BEGIN;",
            "SET @`l`:=_latin1 X'E9' COLLATE `latin1_swedish_ci`;",
            "SET @`i`:=-42;",
            "SET @`n`:=NULL;",
            "INSERT INTO t VALUES (2, @l, @i, @n, NULL);",
            "COMMIT; -- xid=118",
            "-- GTID 0-7-5",
            "BEGIN;",
            "ROLLBACK;",
            "-- INCOMPLETE: binlog-dump stopped here (see its error output)",
        ][-21:]
    )


def test_verbose_sql_comments_each_events_position_and_the_rows_original_statement(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # full file 4, GTID 0-1-112 (8553) to its XID (8791, ends at 8822): one DELETE on the table without key
    path = FIXTURES / "full" / "mysql-bin.000004"
    status = main(["--rows-as", "sql", "-v", "--start-position=8553", "--stop-position=8822", str(path)])
    out, _err = capsys.readouterr()
    assert status == EXIT_OK
    assert out.splitlines() == [
        "SET NAMES utf8mb4;",
        "-- at mysql-bin.000004:8553 MARIADB_GTID",
        "-- GTID 0-1-112",
        "BEGIN;",
        "-- at mysql-bin.000004:8595 ANNOTATE_ROWS",
        "-- DELETE FROM `fixture`.`t_nopk` WHERE a = 1  LIMIT 1",
        "-- at mysql-bin.000004:8740 DELETE_ROWS_V1",
        "SET @@session.time_zone='+00:00', @@session.sql_mode='NO_AUTO_VALUE_ON_ZERO', "
        "@@session.collation_connection='utf8mb4_general_ci', @@session.sql_auto_is_null=0, "
        "@@session.foreign_key_checks=1, @@session.unique_checks=1;",
        "DELETE FROM `fixture`.`t_nopk` WHERE `a` <=> 1 AND CAST(`b` AS BINARY) <=> 'one' AND CAST(`c` AS BINARY) "
        "<=> 'changed' LIMIT 1;",
        "-- at mysql-bin.000004:8791 XID",
        "COMMIT; -- xid=491",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--flashback", "--events"], "--flashback writes SQL of its own; it takes neither --events nor --rows-as"),
        (["--events", "--rows-as", "sql"], "--events prints events as JSON; --rows-as applies to row changes"),
        (["--include-gtids", "0-1"], "argument --include-gtids: '0-1' is neither uuid:interval[:interval...] (MySQL)"),
        (["--start-position", "0-1-5"], "argument -j/--start-position: '0-1-5' is not a byte offset (GTIDs select"),
        (["--stop-datetime", "yesterday"], "argument --stop-datetime: 'yesterday' is not a date and time"),
    ],
)
def test_contradicting_or_malformed_options_are_usage_errors_before_any_output(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*argv, str(FULL_1)])
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (EXIT_USAGE, "")
    assert message in err
