"""Gold's decoder (no Spark session): rows events of real binlogs straight into typed Arrow.

Inputs are built by :mod:`tests.pipelines.gold.inputs` from bronze's framing of the fixture files;
the typed values are compared, value by value, with what the server stored (``expected.jsonl``),
and the JSON of ``changes`` with :mod:`binlog_core.render` of the file decoder's rows.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import StructType, TimestampNTZType, TimestampType

from binlog_core.columns import ABSENT
from binlog_core.decoder import decode_file
from binlog_core.render import render_change
from pipelines.bronze.discover import sequence_of
from pipelines.gold.decode import CONVERTERS, RAW_CONVERTERS, _null_key, table_map_of
from pipelines.gold.types import RAW_SUFFIX, conversion_of, spark_type, type_suffix
from tests.fixtures.binlog_check import encode_text
from tests.fixtures.recorder import PLUGIN_BINARY_TYPES
from tests.fixtures.truth import FIXTURES, VARIANTS, Variant, expected_images, load_variant
from tests.harness.corpus import corpus_path
from tests.harness.typed import typed_matches
from tests.pipelines.gold.inputs import SERVER, GoldInputs, ddl_history, gold_inputs

NAMED = ("full", "minimal_image", "noblob_image", "compressed")
"""Variants whose every file carries column names (the others need the schema history)."""


@cache
def inputs_of(name: str, with_history: bool = True) -> GoldInputs:
    variant = load_variant(name)
    history = ddl_history(variant.files) if with_history and name not in NAMED else None
    return gold_inputs(variant.files, history=history)


@cache
def decoded_of(name: str, with_history: bool = True) -> tuple[list[pa.RecordBatch], list[dict[str, Any]]]:
    """Output batches of a variant's rows events, and its change rows in binlog order."""
    batches = inputs_of(name, with_history).decode()
    rows = [r for b in batches for r in b.to_pylist() if r["kind"] == "change"]
    rows.sort(key=lambda r: (sequence_of(r["file_name"]), r["offset"], r["inner_index"] or -1, r["row_index"]))
    return batches, rows


def image(inputs: GoldInputs, row: dict[str, Any], side: str) -> tuple[dict[str, Any] | None, StructType]:
    index = inputs.tables.index(row["gold_table"])
    return row[f"t{index}"][side], inputs.images[index]


def as_text(kind: str, typed: Any) -> Any:
    """A typed temporal value as MySQL prints it (TIMESTAMP in UTC), checking it is of the right sort."""
    conversion = conversion_of(kind)
    if typed is None or conversion not in ("timestamp", "datetime"):
        return typed
    assert isinstance(typed, datetime)
    if conversion == "timestamp":
        assert typed.tzinfo is not None, f"TIMESTAMP {typed!r} is not an instant"
        typed = typed.astimezone(UTC)
    else:
        assert typed.tzinfo is None, f"DATETIME {typed!r} is not a wall-clock value"
    return typed.isoformat(sep=" ", timespec="microseconds")


def typed_failures(variant: Variant, inputs: GoldInputs, rows: list[dict[str, Any]]) -> tuple[list[str], int]:
    failures: list[str] = []
    checked = 0
    assert len(rows) == len(variant.changes)
    for row, change in zip(rows, variant.changes, strict=True):
        if (row["file_name"], row["op"], row["table_name"]) != (change.file, change.op, change.shape.table):
            return [f"seq {change.seq}: {row['file_name']} {row['op']} {row['table_name']}"], checked
        for side, wanted, values in zip(("before", "after"), expected_images(variant, change), (change.before,
                                        change.after), strict=True):  # fmt: skip
            typed, struct_type = image(inputs, row, side)
            if wanted is None or values is None:
                if typed is not None:
                    failures.append(f"seq {change.seq} {side}: an image where none was logged")
                continue
            assert typed is not None
            absent = set(row[f"absent_{side}"])
            if absent != {n for n in change.shape.names if n not in wanted}:
                failures.append(f"seq {change.seq} {side}: absent {sorted(absent)}")
            for column, kind in zip(*inputs.columns[row["plan_key"]], strict=True):
                if column in absent:
                    if typed[column] is not None:
                        failures.append(f"seq {change.seq} {side}.{column}: absent, yet {typed[column]!r}")
                    continue
                same_type = struct_type[column].dataType == spark_type(kind)
                target = column if same_type else column + type_suffix(kind)
                raw = typed.get(target + RAW_SUFFIX)
                checked += 1
                if not typed_matches(kind, as_text(kind, typed[target]), raw, values[column]):
                    failures.append(f"seq {change.seq} {side}.{target} ({kind}): {typed[target]!r}, raw {raw!r}")
    return failures, checked


@pytest.mark.parametrize("name", VARIANTS)
def test_every_typed_value_is_the_value_the_server_stored(name: str) -> None:
    # files without full metadata: names, signedness, labels and charsets from the replayed DDL
    variant = load_variant(name)
    inputs = inputs_of(name)
    batches, rows = decoded_of(name)
    failures, checked = typed_failures(variant, inputs, rows)
    assert failures[:20] == []
    logged = sum(len(side or []) for c in variant.changes for side in expected_images(variant, c))
    assert checked == logged
    assert [r for b in batches for r in b.to_pylist() if r["kind"] == "problem"] == []


def after_of(name: str, file: str, table: str, key: int) -> tuple[dict[str, Any], StructType]:
    inputs = inputs_of(name)
    _, rows = decoded_of(name)
    row = next(r for r in rows if (r["file_name"], r["table_name"], r["op"]) == (file, table, "insert")
               and (image(inputs, r, "after")[0] or {}).get("id") == key)  # fmt: skip
    after, struct_type = image(inputs, row, "after")
    assert after is not None
    return after, struct_type


def test_zero_and_partly_zero_dates_are_null_with_their_text_in_raw() -> None:
    zero, _ = after_of("full", "mysql-bin.000001", "t_temporal", 1)
    assert (zero["dt"], zero["dt__raw"]) == (None, "0000-00-00")
    assert (zero["dtm6"], zero["dtm6__raw"]) == (None, "0000-00-00 00:00:00.000000")
    assert (zero["ts0"], zero["ts0__raw"]) == (None, "0000-00-00 00:00:00")
    assert zero["t6"] == "00:00:00.000000"  # TIME stays text
    partly, _ = after_of("full", "mysql-bin.000001", "t_temporal", 4)
    assert (partly["dt"], partly["dt__raw"], partly["dtm0"], partly["dtm0__raw"]) == (
        None,
        "2020-00-15",
        None,
        "2020-00-00 12:34:56",
    )
    assert (partly["d_nn"], partly["d_nn__raw"]) == (None, "2020-05-00")
    assert partly["t1"] == "-00:00:01.5"


def test_datetime_is_a_wall_clock_value_and_timestamp_an_instant() -> None:
    top, struct_type = after_of("full", "mysql-bin.000001", "t_temporal", 2)
    assert (struct_type["dtm6"].dataType, struct_type["ts6"].dataType) == (TimestampNTZType(), TimestampType())
    assert (top["dtm6"], top["dtm6__raw"]) == (datetime(9999, 12, 31, 23, 59, 59, 999999), None)
    assert (top["ts6"], top["ts6__raw"]) == (datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC), None)
    assert (top["dt"], top["dt__raw"]) == (date(9999, 12, 31), None)
    leap, _ = after_of("full", "mysql-bin.000001", "t_temporal", 4)
    assert leap["ts3"] == datetime(2000, 2, 29, 23, 59, 59, 123000, tzinfo=UTC)


def test_unsigned_bigint_bit64_wide_decimals_and_float_keep_every_stored_value() -> None:
    ints, struct_type = after_of("full", "mysql-bin.000001", "t_int", 2)
    assert ints["bi_u"] == Decimal("18446744073709551615")
    assert str(struct_type["bi_u"].dataType) == "DecimalType(20,0)"
    bits, _ = after_of("full", "mysql-bin.000001", "t_bityear", 2)
    assert (bits["b64"], bits["b8"], bits["y"]) == (-1, 255, 2155)  # BIT(64) all ones: the same 64 bits
    decimals, struct_type = after_of("full", "mysql-bin.000001", "t_decimal", 1)
    assert decimals["d65_30"] == "99999999999999999999999999999999999.999999999999999999999999999999"
    assert decimals["d38_10"] == Decimal("9999999999999999999999999999.9999999999")
    assert [str(struct_type[n].dataType) for n in ("d65_30", "d38_10", "f")] == [
        "StringType()",
        "DecimalType(38,10)",
        "FloatType()",
    ]
    assert struct.pack("<f", decimals["f"]) == struct.pack("<f", 3.4028234663852886e38)
    smallest, _ = after_of("full", "mysql-bin.000001", "t_decimal", 2)
    assert struct.pack("<f", smallest["f_nn"]) == struct.pack("<f", 1.401298464324817e-45)


def test_text_whose_bytes_do_not_decode_is_null_with_its_bytes_in_raw() -> None:
    # NO_LOG metadata and no schema history: text is read as UTF-8, which latin1 bytes are not
    variant = load_variant("metadata_nolog")
    batches, rows = decoded_of("metadata_nolog", with_history=False)
    inputs = inputs_of("metadata_nolog", with_history=False)
    undecoded = [(row, change) for row, change in zip(rows, variant.changes, strict=True) if row["undecoded_after"]]
    assert undecoded
    kinds: Counter[str] = Counter()
    for row, change in undecoded:
        after, _ = image(inputs, row, "after")
        assert after is not None
        for position in row["undecoded_after"]:
            column = change.shape.columns[int(position.removeprefix("@")) - 1]
            assert change.after is not None
            stored = change.after[column.name]
            assert isinstance(stored, str)
            if column.charset is None:  # a binary string the map cannot tell from text: its bytes as logged
                want = bytes.fromhex(stored.removeprefix("hex:"))
                if column.data_type == "binary" or column.data_type in PLUGIN_BINARY_TYPES:
                    want = want.rstrip(b"\0")  # fixed-length: logged without its trailing zero bytes
            else:
                want = encode_text(stored, column.charset)
            assert (after[position], after[position + RAW_SUFFIX]) == (None, want), (change.seq, column.name)
            kinds[column.data_type] += 1
    # latin1 / utf16 ... text, binary strings, INET and UUID bytes: every one kept whole
    assert kinds == {
        "char": 31, "varchar": 38, "text": 27, "binary": 14, "varbinary": 15, "tinyblob": 7, "blob": 7,
        "mediumblob": 6, "longblob": 7, "inet4": 9, "inet6": 10, "uuid": 24,
    }  # fmt: skip
    warnings = Counter((r["code"], r["severity"]) for b in batches for r in b.to_pylist() if r["kind"] == "problem")
    assert set(warnings) == {("UNDECODABLE_TEXT", "warning")}


def test_a_partial_json_update_is_null_with_its_diffs_in_raw() -> None:
    # MySQL 8.0 with binlog_row_value_options=PARTIAL_JSON: the after image holds diffs
    inputs = gold_inputs([corpus_path("rust_mysql_common/json.binlog.000001")])
    rows = [r for b in inputs.decode() for r in b.to_pylist() if r["event_type"] == "PARTIAL_UPDATE_ROWS"]
    assert [(r["row_index"], r["undecoded_before"], r["undecoded_after"]) for r in rows] == [
        (i, [], ["@2"]) for i in range(6)
    ]
    after, struct_type = image(inputs, rows[0], "after")
    assert after is not None and struct_type["@2__raw"].dataType.simpleString() == "string"
    assert after["@2"] is None
    assert json.loads(after["@2__raw"]) == {"json_diffs": [{"op": "REPLACE", "path": "$.age", "value": "26"}]}
    assert after["@2__raw"] == json.dumps(json.loads(after["@2__raw"]), separators=(",", ":"))
    assert (after["@3"], after["@4"]) == ("Joe", 26)
    assert (rows[0]["absent_before"], rows[0]["absent_after"]) == (["@2", "@3", "@4"], ["@1"])  # MINIMAL images


def test_converters_cover_every_conversion_a_kind_names() -> None:
    conversions = {conversion_of(k) for kinds in inputs_of("full").kinds.values() for ks in kinds for k in ks}
    assert conversions <= set(CONVERTERS) | set(RAW_CONVERTERS)
    assert set(RAW_CONVERTERS) == {"timestamp", "datetime", "date", "text", "json"}
    assert {"int", "decimal", "float", "double", "time", "year", "bit", "enum", "set", "binary"} <= conversions


def test_a_rows_event_without_a_map_is_one_unknown_table_id_problem_and_no_row() -> None:
    inputs = inputs_of("full")
    first, second = inputs.rows[0], inputs.rows[1]
    out = [
        r
        for b in inputs.decode([{**first, "plan_key": None, "map_offset": None, "map_inner_index": None}, second])
        for r in b.to_pylist()
    ]
    problems = [r for r in out if r["kind"] == "problem"]
    assert [(p["offset"], p["code"], p["severity"], p["problem_body"], p["table_id"]) for p in problems] == [
        (first["offset"], "UNKNOWN_TABLE_ID", "error", first["body"], first["table_id"])
    ]
    assert problems[0]["message"] == f"table id {first['table_id']} has no TABLE_MAP in force in this file"
    assert problems[0]["path"] == "WRITE_ROWS_V1"
    assert problems[0]["gold_table"] is None
    assert {r["offset"] for r in out if r["kind"] == "change"} == {second["offset"]}


def test_a_rows_event_whose_map_did_not_decode_names_that_map_in_its_problem() -> None:
    inputs = inputs_of("full")
    first = inputs.rows[0]
    out = [r for b in inputs.decode([{**first, "plan_key": None}]) for r in b.to_pylist()]
    assert [(r["code"], r["message"]) for r in out] == [
        (
            "UNKNOWN_TABLE_ID",
            f"table id {first['table_id']}: the TABLE_MAP in force (at {first['map_offset']}) did not decode",
        )
    ]


def test_a_rows_event_without_a_map_whose_header_is_damaged_is_malformed_as_the_decoder_finds_it() -> None:
    # a FORMAT_DESCRIPTION, then three WRITE_ROWS_V2 with a bad extra-data tag and no TABLE_MAP
    path = corpus_path("mariadb-test-data/suite/binlog/std_data/invalid_row_v2_tag.001")
    inputs = gold_inputs([path])
    out = [r for b in inputs.decode() for r in b.to_pylist()]
    decoder = [(item.event.offset, p.code) for item in decode_file(path) for p in item.problems]
    assert [(r["offset"], r["code"]) for r in out if r["kind"] == "problem"] == decoder
    assert {code for _, code in decoder} == {"MALFORMED"}
    assert not [r for r in out if r["kind"] == "change"]


def test_a_rows_event_cut_short_keeps_the_rows_before_the_damage_and_is_a_malformed_problem() -> None:
    # as binlog_core's decoder does: the rows read before the row that failed are kept
    inputs = gold_inputs([FIXTURES / "full" / "mysql-bin.000003"])
    event = inputs.rows[0]
    whole = [r for b in inputs.decode([event]) for r in b.to_pylist()]
    cut = [r for b in inputs.decode([{**event, "body": event["body"][:-3]}]) for r in b.to_pylist()]
    assert [(r["kind"], r["row_index"]) for r in whole] == [("change", 0), ("change", 1), ("change", 2)]
    assert sorted((r["kind"], r["row_index"], r["code"], r["path"]) for r in cut if r["kind"] == "problem") == [
        ("problem", None, "MALFORMED", "WRITE_ROWS_V1 -> row 2 -> col 3 b")
    ]
    kept = [r for r in cut if r["kind"] == "change"]
    assert [(r["row_index"], r["after"]) for r in kept] == [(r["row_index"], r["after"]) for r in whole[:2]]
    assert [r["problem_body"] for r in cut if r["kind"] == "problem"] == [event["body"][:-3]]


def test_a_rows_event_cut_short_inside_its_first_row_is_a_malformed_problem_and_no_row() -> None:
    # alone in its batch: its table's output holds no row at all, only the problem does
    inputs = gold_inputs([FIXTURES / "full" / "mysql-bin.000003"])
    event = inputs.rows[0]

    def decoded(body: bytes) -> list[dict[str, Any]]:
        return [r for b in inputs.decode([{**event, "body": body}]) for r in b.to_pylist()]

    body = event["body"]
    length = next(n for n in range(len(body) - 1, 0, -1) if not [r for r in decoded(body[:n]) if r["kind"] == "change"])
    out = decoded(body[:length])
    assert [(r["kind"], r["code"], r["event_first"]) for r in out] == [("problem", "MALFORMED", True)]
    assert "row 0" in out[0]["path"]


def test_each_rows_event_has_one_first_row_whether_it_decodes_is_cut_short_or_has_no_map() -> None:
    inputs = gold_inputs([FIXTURES / "full" / "mysql-bin.000003"])
    cut, whole, unmapped = inputs.rows[0], inputs.rows[1], inputs.rows[2]
    events = [{**cut, "body": cut["body"][:-3]}, whole, {**unmapped, "plan_key": None}]
    out = [r for b in inputs.decode(events) for r in b.to_pylist()]
    firsts = sorted((r["offset"], r["kind"], r["row_index"]) for r in out if r["event_first"])
    assert firsts == sorted(
        [(whole["offset"], "change", 0), (cut["offset"], "change", 0), (unmapped["offset"], "problem", None)]
    )
    assert len(out) > len(firsts)  # the other rows of each event are not first


def test_an_insert_with_a_key_says_whether_its_after_image_leaves_a_key_column_null() -> None:
    inputs = inputs_of("full")
    _, rows = decoded_of("full")
    keyed = {p.table for p in inputs.plans.values() if table_map_of(p.map_body, p.fde, p.history).primary_key}
    checked = [r for r in rows if r["null_key"] is not None]
    assert checked and {r["op"] for r in checked} == {"insert"}
    assert {inputs.tables.index(r["gold_table"]) for r in checked} == keyed
    assert not any(r["null_key"] for r in checked)  # the server wrote every key
    assert all(r["null_key"] is None for r in rows if r["op"] != "insert")
    assert _null_key([None, 7], [0]) and not _null_key([ABSENT, 7], [0]) and _null_key(None, [0]) is None


@pytest.mark.parametrize("name", ["full", "compressed"])
def test_the_json_of_changes_is_binlog_core_render_of_the_file_decoders_rows(name: str) -> None:
    variant = load_variant(name)
    _, rows = decoded_of(name)
    want = [render_change(c) for path in variant.files for item in decode_file(path) for c in item.rows]
    got = [
        {
            "file": r["file_name"],
            "offset": r["offset"],
            "inner_index": r["inner_index"],
            "row_index": r["row_index"],
            "event_type": r["event_type"],
            "gtid": r["gtid"],
            "timestamp": int(r["event_timestamp"].timestamp()),
            "server_id": r["server_id"],
            "schema": r["schema_name"],
            "table": r["table_name"],
            "table_id": r["table_id"],
            "op": r["op"],
            "before": None if r["before"] is None else json.loads(r["before"]),
            "after": None if r["after"] is None else json.loads(r["after"]),
        }
        for r in rows
    ]
    assert len(got) == variant.manifest["row_changes"]
    assert got == want


def test_each_output_batch_holds_one_tables_rows_in_that_tables_struct_only() -> None:
    inputs = inputs_of("full")
    batches, _ = decoded_of("full")
    tables_seen: Counter[str | None] = Counter()
    for batch in batches:
        rows = batch.to_pylist()
        kinds = {r["kind"] for r in rows}
        gold = {r["gold_table"] for r in rows}
        assert len(kinds) == 1 and len(gold) == 1
        (table,) = gold
        filled = {i for i in range(len(inputs.tables)) if batch.column(f"t{i}").null_count < batch.num_rows}
        assert filled == ({inputs.tables.index(table)} if table is not None else set())
        if table is not None:
            assert batch.column(f"t{inputs.tables.index(table)}").null_count == 0
        tables_seen[table] += batch.num_rows
    assert set(tables_seen) == set(inputs.tables)
    assert sum(tables_seen.values()) == load_variant("full").manifest["row_changes"]


def test_every_row_carries_its_events_transaction_and_commit_time_as_given() -> None:
    inputs = inputs_of("sample")
    _, rows = decoded_of("sample")
    given = {(r["file"], r["offset"], r["inner_index"]): r for r in inputs.rows}
    passed = ("file_name", "gtid", "trx_offset", "trx_inner_index", "server_id")
    for row in rows:
        event = given[(row["file"], row["offset"], row["inner_index"])]
        assert {n: row[n] for n in passed} == {n: event[n] for n in passed}
        assert row["xid"] == event["xid"] is not None
        assert row["commit_timestamp"] == datetime.fromtimestamp(event["commit_timestamp"] / 1e6, UTC)
        assert row["event_timestamp"] == datetime.fromtimestamp(event["timestamp"], UTC)
        assert row["server"] == SERVER
    assert len({r["xid"] for r in rows}) > 50


def test_a_column_whose_type_changes_fills_a_field_named_by_its_new_type() -> None:
    variant = load_variant("full")
    inputs = inputs_of("full")
    _, rows = decoded_of("full")
    index = inputs.tables.index("fixture__t_evolve")
    assert inputs.images[index].simpleString() == (
        "struct<id:int,a:int,b:string,b__raw:binary,c:date,c__raw:string,z:tinyint,m:string,m__raw:binary,"
        "a__bigint:bigint,m2:string,m2__raw:binary,m3:string,m3__raw:binary>"
    )
    seen: Counter[bool] = Counter()
    for row, change in zip(rows, variant.changes, strict=True):
        if change.shape.table != "t_evolve" or change.after is None:
            continue
        after, _ = image(inputs, row, "after")
        assert after is not None
        widened = change.shape.types[change.shape.names.index("a")].startswith("bigint")
        field, other = ("a__bigint", "a") if widened else ("a", "a__bigint")
        assert (after[field], after[other]) == (change.after["a"], None)
        seen[widened] += 1
    assert seen[True] > 0 and seen[False] > 0


def test_names_of_a_map_without_metadata_come_from_the_history_given_with_its_plan() -> None:
    with_history, without = decoded_of("metadata_nolog")[1], decoded_of("metadata_nolog", False)[1]
    variant = load_variant("metadata_nolog")
    named, unnamed = inputs_of("metadata_nolog").columns, inputs_of("metadata_nolog", False).columns
    assert [named[r["plan_key"]][0] for r in with_history] == [c.shape.names for c in variant.changes]
    assert [unnamed[r["plan_key"]][0] for r in without] == [
        [f"@{i + 1}" for i in range(len(c.shape.names))] for c in variant.changes
    ]
    kinds = {(r["table_name"], n): k for r in with_history for n, k in zip(*named[r["plan_key"]], strict=True)}
    assert (kinds[("t_int", "bi_u")], kinds[("t_binary", "bn8")]) == ("int:decimal(20,0)", "binary:binary")
    assert kinds[("t_temporal", "dtm6")] == "datetime:timestamp_ntz"
