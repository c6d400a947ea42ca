"""The decoder against binlogs a real MariaDB server wrote, value by value.

The truth is what the workload wrote and read back with ``SELECT`` (``expected.jsonl``), never
what a decoder printed.  Every variant's files are decoded in order and each row change is
compared: file, operation, table, column names (where the file carries them), the exact set of
columns each image holds for the server's ``binlog_row_image``, and every value.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from binlog_core.cli import main as binlog_dump
from binlog_core.columns import ABSENT
from binlog_core.decoder import RowChange, decode_file
from binlog_core.errors import BinlogError
from binlog_core.render import render_value
from tests.fixtures.binlog_check import encode_text
from tests.fixtures.recorder import BINARY_TYPES, PLUGIN_BINARY_TYPES, Column, JsonValue
from tests.fixtures.truth import VARIANTS, Variant, expected_images, load_variant, mismatch


def _decode(variant: Variant) -> tuple[list[RowChange], list[BinlogError]]:
    changes: list[RowChange] = []
    problems: list[BinlogError] = []
    for path in variant.files:
        for item in decode_file(path):
            changes.extend(item.rows)
            problems.extend(item.problems)
    return changes, problems


@pytest.fixture(scope="module", params=VARIANTS)
def decoded(request: pytest.FixtureRequest) -> tuple[Variant, list[RowChange], list[BinlogError]]:
    variant = load_variant(request.param)
    changes, problems = _decode(variant)
    return variant, changes, problems


_TEXT_OR_BINARY = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext"})


def _stored_bytes(column: Column, value: JsonValue) -> bytes | None:
    """The bytes the server stored for a string value (``None`` for other types)."""
    if column.data_type in _TEXT_OR_BINARY:
        assert isinstance(value, str)
        return encode_text(value, column.charset)
    if column.data_type in BINARY_TYPES or column.data_type in PLUGIN_BINARY_TYPES:
        assert isinstance(value, str) and value.startswith("hex:")
        return bytes.fromhex(value[4:])
    return None


def _not_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def expected_problems(variant: Variant, changes: list[RowChange]) -> Counter[tuple[str, int | None, str, str]]:
    """What decoding a variant must report: only where a file names no charset (NO_LOG metadata),
    each string value whose stored bytes are no UTF-8 (binary values, latin1/gbk/... text) is kept
    as bytes with a warning; everything else decodes without a problem."""
    expected: Counter[tuple[str, int | None, str, str]] = Counter()
    for change, truth in zip(changes, variant.changes, strict=True):
        if variant.metadata_for(change.file) != "NO_LOG":
            continue
        for image, values in ((change.before, truth.before), (change.after, truth.after)):
            if image is None or values is None:
                continue
            for i, (column, value) in enumerate(zip(truth.shape.columns, image, strict=True)):
                if value is ABSENT or value is None:
                    continue
                raw = _stored_bytes(column, values[column.name])
                if raw is not None and _not_utf8(raw):
                    expected[(change.file, change.offset, "UNDECODABLE_TEXT", f"col {i + 1} @{i + 1}")] += 1
    return expected


def test_every_fixture_file_decodes_without_a_problem_but_text_the_default_charset_cannot_read(
    decoded: tuple[Variant, list[RowChange], list[BinlogError]],
) -> None:
    variant, changes, problems = decoded
    got = Counter((p.file or "", p.offset, p.code, " -> ".join(p.path)) for p in problems)
    assert got == expected_problems(variant, changes)
    assert {p.severity for p in problems} <= {"warning"}
    if variant.name == "metadata_nolog":
        assert sum(got.values()) == 227  # binary values and latin1, gbk, ... text of the type workload


def test_row_changes_come_out_in_binlog_order_with_file_op_and_table(
    decoded: tuple[Variant, list[RowChange], list[BinlogError]],
) -> None:
    variant, changes, _problems = decoded
    got = [(c.file, c.op, c.schema, c.table) for c in changes]
    want = [(e.file, e.op, e.shape.schema, e.shape.table) for e in variant.changes]
    assert got == want


def test_column_names_are_those_of_the_table_when_the_file_carries_them(
    decoded: tuple[Variant, list[RowChange], list[BinlogError]],
) -> None:
    variant, changes, _problems = decoded
    for change, expected in zip(changes, variant.changes, strict=True):
        table_map = change.table_map
        assert len(table_map.columns) == len(expected.shape.names), f"seq {expected.seq}"
        if variant.metadata_for(change.file) == "FULL":
            assert list(table_map.column_names) == expected.shape.names, f"seq {expected.seq}"
        else:
            assert not table_map.has_names
            assert list(table_map.column_names) == [f"@{i + 1}" for i in range(len(expected.shape.names))]


def test_each_image_holds_exactly_the_columns_its_row_image_mode_logs(
    decoded: tuple[Variant, list[RowChange], list[BinlogError]],
) -> None:
    variant, changes, _problems = decoded
    for change, expected in zip(changes, variant.changes, strict=True):
        names = expected.shape.names
        want_before, want_after = expected_images(variant, expected)
        for image, want in ((change.before, want_before), (change.after, want_after)):
            if want is None:
                assert image is None, f"seq {expected.seq}"
                continue
            assert image is not None, f"seq {expected.seq}"
            present = [names[i] for i, v in enumerate(image) if v is not ABSENT]
            assert present == want, f"seq {expected.seq} ({expected.statement})"


def test_every_value_equals_what_the_server_stored(decoded: tuple[Variant, list[RowChange], list[BinlogError]]) -> None:
    variant, changes, _problems = decoded
    failures: list[str] = []
    for change, expected in zip(changes, variant.changes, strict=True):
        for side, image, truth in (("before", change.before, expected.before), ("after", change.after, expected.after)):
            if image is None or truth is None:
                continue
            for column, tm_column, value in zip(expected.shape.columns, change.table_map.columns, image, strict=True):
                if value is ABSENT:
                    continue
                problem = mismatch(column, value, render_value(value, tm_column), truth[column.name])
                if problem:
                    failures.append(f"seq {expected.seq} {side} {expected.shape.name}.{column.name}: {problem}")
    assert failures == [], "\n".join(failures[:30])


def test_compressed_variant_holds_mariadb_compressed_events() -> None:
    variant = load_variant("compressed")
    types = {item.event.type_name for path in variant.files for item in decode_file(path)}
    assert {"QUERY_COMPRESSED", "WRITE_ROWS_COMPRESSED_V1"} <= types


def test_binlog_dump_prints_one_json_line_per_row_change_keyed_by_column_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variant = load_variant("full")
    status = binlog_dump([str(p) for p in variant.files])
    out, err = capsys.readouterr()
    records = [json.loads(line) for line in out.splitlines()]
    assert (status, err) == (0, "")
    assert len(records) == len(variant.changes)
    first, truth = records[0], variant.changes[0]
    assert (first["file"], first["op"], first["schema"], first["table"]) == (
        truth.file,
        truth.op,
        truth.shape.schema,
        truth.shape.table,
    )
    assert first["row_index"] == 0 and first["inner_index"] is None and first["before"] is None
    assert list(first["after"]) == truth.shape.names
    non_float = {c.name for c in truth.shape.columns if c.data_type != "float"}
    assert {k: v for k, v in first["after"].items() if k in non_float} == {
        k: v for k, v in (truth.after or {}).items() if k in non_float
    }
