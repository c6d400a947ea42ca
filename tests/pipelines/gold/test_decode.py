"""Rows events decoded one by one with the table map given beside them (no Spark session)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from binlog_core.decoder import BinlogDecoder, decode_file
from binlog_core.framing import iter_events
from binlog_core.render import render_change
from binlog_core.rows import ROWS_KINDS, decode_rows_header
from pipelines.gold.decode import RowsDecoder
from tests.fixtures.recorder import Change
from tests.fixtures.truth import FIXTURES, load_variant, strict_mismatch
from tests.harness.corpus import corpus_path

DDL_FILE = FIXTURES / "full" / "mysql-bin.000003"


def _inputs(path: Path) -> list[dict[str, Any]]:
    """ROWS_INPUT rows of a file, each with the map the file decoder has in force for it."""
    decoder = BinlogDecoder()
    bodies: dict[tuple[int, int | None], tuple[bytes, str]] = {}
    out: list[dict[str, Any]] = []
    with open(path, "rb") as stream:
        for event in iter_events(stream, path.name):
            if event.type_code in ROWS_KINDS:
                table_id = decode_rows_header(event.body, event.type_code, event.fde).table_id
                mapped = decoder.in_force.get(table_id)
                body, fde = bodies[(mapped.offset, mapped.inner_index)] if mapped else (None, None)
                out.append(
                    {
                        "file": str(path),
                        "file_name": path.name,
                        "offset": event.offset,
                        "inner_index": event.inner_index,
                        "timestamp": event.header.timestamp,
                        "event_type": event.type_code,
                        "server_id": event.header.server_id,
                        "gtid": decoder.gtid,
                        "body": event.body,
                        "format_description": event.fde.to_json(),
                        "map_body": body,
                        "map_format_description": fde,
                        "history_columns": None,
                    }
                )
            else:
                bodies[(event.offset, event.inner_index)] = (event.body, event.fde.to_json())
            decoder.decode(event)
    return out


def test_each_rows_event_decodes_alone_to_what_the_file_decoder_gives() -> None:
    decoder = RowsDecoder()
    got = [row for event in _inputs(DDL_FILE) for row in decoder.decode_event(event)]
    want = [render_change(c) for item in decode_file(DDL_FILE) for c in item.rows]
    assert [r["kind"] for r in got] == ["change"] * len(want)
    assert [
        {
            "file": r["file_name"],
            "offset": r["offset"],
            "inner_index": r["inner_index"],
            "row_index": r["row_index"],
            "event_type": r["event_type"],
            "gtid": r["gtid"],
            "timestamp": r["timestamp"],
            "server_id": r["server_id"],
            "schema": r["schema_name"],
            "table": r["table_name"],
            "table_id": r["table_id"],
            "op": r["op"],
            "before": None if r["before"] is None else json.loads(r["before"]),
            "after": None if r["after"] is None else json.loads(r["after"]),
        }
        for r in got
    ] == want


def test_a_rows_event_without_a_table_map_is_one_unknown_table_id_problem_and_no_row() -> None:
    event = {**_inputs(DDL_FILE)[0], "map_body": None, "map_format_description": None}
    rows = RowsDecoder().decode_event(event)
    assert [(r["kind"], r["code"], r["severity"], r["problem_body"]) for r in rows] == [
        ("problem", "UNKNOWN_TABLE_ID", "error", event["body"])
    ]
    assert rows[0]["message"].endswith("has no TABLE_MAP in force in this file")


def test_a_rows_event_cut_short_keeps_the_rows_before_the_damage_and_is_a_malformed_problem() -> None:
    event = _inputs(DDL_FILE)[0]
    whole = RowsDecoder().decode_event(event)
    rows = RowsDecoder().decode_event({**event, "body": event["body"][:-3]})
    assert [(r["kind"], r.get("row_index"), r.get("code")) for r in rows] == [
        ("change", 0, None),
        ("change", 1, None),
        ("problem", None, "MALFORMED"),
    ]
    assert [r["after"] for r in rows[:2]] == [r["after"] for r in whole[:2]]
    assert rows[2]["path"] == "WRITE_ROWS_V1 -> row 2 -> col 3 b"
    assert rows[2]["problem_body"] == event["body"][:-3]


def test_names_from_the_schema_history_are_used_when_the_map_carries_none() -> None:
    path = FIXTURES / "metadata_nolog" / "mysql-bin.000003"
    event = _inputs(path)[0]
    plain = RowsDecoder().decode_event(event)[0]
    history = [
        {"position": i + 1, "name": f"c{i}", "type": "", "nullable": True, "charset": None, "collation": None}
        for i in range(len(plain["column_names"]))
    ]
    named = RowsDecoder().decode_event({**event, "history_columns": history})[0]
    names = [c["name"] for c in history]
    assert plain["column_names"] == [f"@{i + 1}" for i in range(len(names))]
    assert named["column_names"] == names
    assert list(json.loads(named["after"])) == names
    assert list(json.loads(named["after"]).values()) == list(json.loads(plain["after"]).values())


def test_signedness_labels_and_charsets_from_the_schema_history_complete_a_map_without_metadata() -> None:
    # a NO_LOG file: without its table's columns unsigned integers come out negative, ENUM/SET as
    # numbers, BINARY(n) unpadded; with them every value is the one the server stored
    path = FIXTURES / "metadata_nolog" / "mysql-bin.000001"
    truth = [c for c in load_variant("metadata_nolog").changes if c.file == path.name]
    decoder = RowsDecoder()
    got: list[tuple[Change, dict[str, Any]]] = []
    for event in _inputs(path):
        table = RowsDecoder().decode_event(event)[0]["table_name"]
        shape = next(c.shape for c in truth[len(got) :] if c.shape.table == table)
        history = [
            {"position": i + 1, "name": c.name, "type": c.column_type, "nullable": c.nullable,
             "charset": c.charset, "collation": c.collation}
            for i, c in enumerate(shape.columns)
        ]  # fmt: skip
        rows = decoder.decode_event({**event, "history_columns": history})
        assert [r["kind"] for r in rows] == ["change"] * len(rows)
        got += [(truth[len(got) + i], r) for i, r in enumerate(rows)]
    assert len(got) == len(truth)
    failures = [
        f"seq {change.seq} {side} {column.name}: {problem}"
        for change, row in got
        for side, values in (("before", change.before), ("after", change.after))
        if values is not None
        for column in change.shape.columns
        if (problem := strict_mismatch(column, json.loads(row[side])[column.name], values[column.name]))
    ]
    assert failures == []
    kinds = {(r["table_name"], n): k for _, r in got for n, k in zip(r["column_names"], r["column_kinds"], strict=True)}
    assert kinds[("t_int", "bi_u")] == "int:decimal(20,0)"
    assert kinds[("t_binary", "bn8")] == "binary:binary"


@pytest.mark.corpus
def test_a_partial_json_update_is_marked_as_another_form_than_the_document() -> None:
    # MySQL 8.0 with binlog_row_value_options=PARTIAL_JSON: the after image holds diffs
    path = corpus_path("rust_mysql_common/json.binlog.000001")
    decoder = RowsDecoder()
    partial = [r for e in _inputs(path) for r in decoder.decode_event(e) if r["event_type"] == "PARTIAL_UPDATE_ROWS"]
    assert [(r["row_index"], r["undecoded_before"], r["undecoded_after"]) for r in partial] == [
        (i, [], ["@2"]) for i in range(6)
    ]
    assert json.loads(partial[0]["after"])["@2"] == {"json_diffs": [{"op": "REPLACE", "path": "$.age", "value": "26"}]}
