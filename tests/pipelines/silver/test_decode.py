"""Python-side decoding for silver (no Spark session): TABLE_MAP and QUERY bodies of bronze rows.

Inputs are bronze's own framing of real fixture binlogs (:func:`pipelines.bronze.framing.frame_file`),
passed to the ``mapInArrow`` functions as Arrow batches with the bronze columns silver reads; the
expected values come from ``binlog_core`` decoding the same files.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from binlog_core.charsets import collation_info
from binlog_core.constants import EventType
from binlog_core.decoder import decode_file
from binlog_core.errors import BinlogError
from binlog_core.event import FormatDescription
from binlog_core.events.query import QueryEvent, StatementKind
from binlog_core.table_map import TableMap, decode_table_map
from pipelines.bronze.framing import EventRow, FileSummary, frame_file
from pipelines.silver.ddl import SchemaRegistry
from pipelines.silver.decode import Descriptions, mysql_type, query_rows, shape_key, status_vars, table_map_rows
from pipelines.silver.write import MAP_INPUT, MAPS_OUT, QUERIES_OUT, QUERY_INPUT
from pipelines.tables import BINLOG_EVENTS
from tests.fixtures.truth import FIXTURES

MARIADB_STORED_AS = {
    ("t_json_geo", "j"): ("json", "longtext"),  # MariaDB's JSON is an alias of LONGTEXT
    ("t_inet_uuid", "i4"): ("inet4", "binary(4)"),
    ("t_inet_uuid", "i6"): ("inet6", "binary(16)"),
    ("t_inet_uuid", "u"): ("uuid", "binary(16)"),
    ("t_inet_uuid", "u_nn"): ("uuid", "binary(16)"),
    ("t_evolved", "val"): ("json", "longtext"),
}


def framed(path: Path) -> tuple[list[dict[str, Any]], FileSummary]:
    """Bronze's event rows (as dicts) and summary of one file."""
    out = list(frame_file(lambda: path.open("rb"), str(path), path.name, size=path.stat().st_size))
    summary = out[-1]
    assert isinstance(summary, FileSummary)
    return [row._asdict() for row in out if isinstance(row, EventRow)], summary


def batch(rows: list[dict[str, Any]], columns: list[str]) -> pa.RecordBatch:
    """Bronze rows as the Arrow batch ``mapInArrow`` hands silver (only ``columns``)."""
    schema = to_arrow_schema(StructType([BINLOG_EVENTS.schema[name] for name in columns]), timezone="UTC")
    return pa.RecordBatch.from_pylist([{name: r[name] for name in columns} for r in rows], schema=schema)


def fdes_of(summary: FileSummary) -> Descriptions:
    return {(summary.file, offset): text for offset, text in summary.format_descriptions.items()}


def decoded_maps(path: Path, change: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(bronze TABLE_MAP rows, what :func:`table_map_rows` gives for them); ``change`` alters each row first."""
    events, summary = framed(path)
    maps = [e if change is None else change(e) for e in events if e["event_class"] == "table_map"]
    out = table_map_rows(iter([batch(maps, MAP_INPUT)]), to_arrow_schema(MAPS_OUT, timezone="UTC"), fdes_of(summary))
    return maps, [r for b in out for r in b.to_pylist()]


def test_map_columns_render_the_type_text_their_create_table_wrote() -> None:
    registry = SchemaRegistry()
    compared, differing = 0, {}
    for path in sorted((FIXTURES / "full").glob("mysql-bin.0*")):
        for item in decode_file(path):
            body = item.body
            if isinstance(body, QueryEvent) and body.kind == StatementKind.DDL:
                assert isinstance(body.statement, str)
                registry.apply(body.statement, body.schema or None)
            elif isinstance(body, TableMap):
                for column, spec in zip(body.columns, registry.columns(body.schema, body.table) or [], strict=True):
                    info = collation_info(column.collation, item.event.fde.flavor) if column.collation else None
                    rendered = mysql_type(column, info.charset if info else None)
                    compared += 1
                    if rendered != spec.type:
                        differing[(body.table, column.name)] = (spec.type, rendered)
    assert compared > 300
    assert differing == MARIADB_STORED_AS


def test_status_variables_are_given_as_strings_and_as_typed_json() -> None:
    path = FIXTURES / "full" / "mysql-bin.000001"
    query = next(
        item.body
        for item in decode_file(path)
        if isinstance(item.body, QueryEvent) and item.body.kind == StatementKind.DDL
    )
    as_text, as_json = status_vars(query)
    assert as_text == {
        "flags2": "16777216",
        "sql_mode": "0",
        "catalog": "std",
        "charset_client": "45",
        "collation_connection": "45",
        "collation_server": "45",
    }
    assert json.loads(as_json) == {
        "catalog": "std",
        "charset_client": 45,
        "collation_connection": 45,
        "collation_server": 45,
        "flags2": 16777216,
        "sql_mode": 0,
    }


def test_every_table_map_decodes_to_binlog_cores_map_and_keeps_bronzes_in_force_facts() -> None:
    path = FIXTURES / "full" / "mysql-bin.000003"  # DDL mid-stream: the shapes change
    maps, out = decoded_maps(path)
    assert len(out) == len(maps) == 14
    for bronze, row in zip(maps, out, strict=True):
        fde = FormatDescription.from_json(framed(path)[1].format_descriptions[bronze["fde_offset"]])
        table_map = decode_table_map(bronze["body"], fde)
        assert row["problem_code"] is None
        assert (row["file"], row["offset"], row["inner_index"], row["in_force_from"]) == (
            str(path),
            bronze["offset"],
            None,
            bronze["offset"],
        )
        assert (row["table_id"], row["schema_name"], row["table_name"], row["fingerprint"]) == (
            table_map.table_id,
            table_map.schema,
            table_map.table,
            table_map.fingerprint,
        )
        assert row["column_names"] == [c.name for c in table_map.columns]
        assert row["column_types"] == [int(c.type) for c in table_map.columns]
        assert row["primary_key"] == [i + 1 for i in table_map.primary_key]
        assert [c["position"] for c in row["columns"]] == list(range(1, len(table_map.columns) + 1))
        for name in ("in_force_until", "in_force_until_inner_index", "ended_by", "rows_events", "shape_changed"):
            assert row[name] == bronze[name], name
        assert row["body"] == bronze["body"]
    assert Counter(r["ended_by"] for r in out) == Counter(m["ended_by"] for m in maps)


def test_maps_of_one_shape_in_two_files_have_one_shape_key_whatever_their_table_id() -> None:
    # FLUSH TABLES in file 2 gives the tables new ids; nothing else of their maps changes
    keys: dict[tuple[str, str], set[str]] = {}
    ids: dict[tuple[str, str], set[int]] = {}
    for name in ("mysql-bin.000002", "mysql-bin.000004"):
        path = FIXTURES / "metadata_nolog" / name
        events, summary = framed(path)
        for e in events:
            if e["event_class"] == "table_map" and e["body"][8:].startswith(b"\x07fixture\x00\x05t_int\x00"):
                fde = summary.format_descriptions[e["fde_offset"]]
                keys.setdefault(("fixture", "t_int"), set()).add(shape_key(e["body"], fde))
                ids.setdefault(("fixture", "t_int"), set()).add(int.from_bytes(e["body"][:6], "little"))
    assert len(ids[("fixture", "t_int")]) > 1
    assert len(keys[("fixture", "t_int")]) == 1


def test_a_map_with_an_unknown_optional_field_decodes_and_gives_a_warning_row_beside_it() -> None:
    path = FIXTURES / "full" / "mysql-bin.000001"
    first: list[bool] = []

    def extended(row: dict[str, Any]) -> dict[str, Any]:
        if first:
            return row
        first.append(True)
        return {**row, "body": row["body"] + bytes([14, 2]) + b"ab"}  # optional field type 14 (unknown), 2 bytes

    maps, out = decoded_maps(path, extended)
    assert [(r["offset"], r["problem_code"], r["problem_severity"], r["problem_path"]) for r in out[:3]] == [
        (maps[0]["offset"], None, None, None),
        (maps[0]["offset"], "UNKNOWN_OPTIONAL_METADATA", "warning", "optional metadata 14"),
        (maps[1]["offset"], None, None, None),
    ]
    assert out[0]["unknown_optional"] == [{"field_type": 14, "value": b"ab"}]
    assert out[1]["body"] == maps[0]["body"]
    assert len(out) == len(maps) + 1


def test_every_prefix_of_a_real_map_body_is_a_malformed_error_row_unless_binlog_core_decodes_it() -> None:
    path = FIXTURES / "sample" / "mysql-bin.000001"
    events, summary = framed(path)
    bronze = next(e for e in events if e["event_class"] == "table_map" and e["rows_events"])
    fde = FormatDescription.from_json(summary.format_descriptions[bronze["fde_offset"]])
    prefixes = [{**bronze, "body": bronze["body"][:n]} for n in range(len(bronze["body"]))]
    out = [
        r
        for b in table_map_rows(
            iter([batch(prefixes, MAP_INPUT)]), to_arrow_schema(MAPS_OUT, timezone="UTC"), fdes_of(summary)
        )
        for r in b.to_pylist()
    ]
    decodes = []
    for prefix in prefixes:
        try:
            decode_table_map(prefix["body"], fde)
            decodes.append(True)
        except BinlogError:
            decodes.append(False)
    assert len(out) == len(prefixes)
    # the whole event was framed: a field running past its end is damage to the event, not a cut file
    assert [r["problem_code"] for r in out] == [None if ok else "MALFORMED" for ok in decodes]
    assert decodes.count(False) > len(prefixes) // 2
    errors = [(r, p) for r, p in zip(out, prefixes, strict=True) if r["problem_code"]]
    assert all(r["body"] == p["body"] and r["rows_events"] == bronze["rows_events"] == 1 for r, p in errors)
    assert {(r["problem_severity"], r["event_type_name"]) for r, _ in errors} == {("error", "TABLE_MAP")}


def queries_of(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    events, summary = framed(path)
    queries = [e for e in events if e["event_class"] == "query"]
    schema = to_arrow_schema(QUERIES_OUT, timezone="UTC")
    out = query_rows(iter([batch(queries, QUERY_INPUT)]), schema, fdes_of(summary))
    return queries, [r for b in out for r in b.to_pylist()]


def test_every_query_event_becomes_a_ddl_events_row_with_its_statement_and_bronzes_transaction() -> None:
    path = FIXTURES / "sample" / "mysql-bin.000002"  # ALTER, DROP and CREATE inside DML transactions
    queries, out = queries_of(path)
    decoded = {item.event.offset: item.body for item in decode_file(path) if item.event.type_code == EventType.QUERY}
    assert [r["offset"] for r in out] == [q["offset"] for q in queries] == sorted(decoded)
    for bronze, row in zip(queries, out, strict=True):
        body = decoded[row["offset"]]
        assert isinstance(body, QueryEvent)
        assert (row["statement"], row["kind"], row["default_schema"], row["thread_id"], row["error_code"]) == (
            body.statement,
            str(body.kind),
            body.schema or None,
            body.thread_id,
            body.error_code,
        )
        assert (row["gtid"], row["trx_offset"], row["timestamp"], row["server_id"]) == (
            bronze["gtid"],
            bronze["trx_offset"],
            bronze["timestamp"],
            bronze["server_id"],
        )
        micros = bronze["commit_timestamp"]
        assert row["commit_timestamp"] == (None if micros is None else datetime.fromtimestamp(micros / 1e6, UTC))
        assert row["problem_code"] is None
    assert Counter(r["kind"] for r in out) == {"DDL": 3, "OTHER": 2}  # FLUSH TABLES twice
    assert [r["statement"] for r in out if r["kind"] == "DDL"] == [
        "ALTER TABLE shop.customers ADD COLUMN loyalty_tier ENUM('none','silver','gold') NOT NULL DEFAULT 'none' "
        "AFTER country",
        "DROP TABLE `shop`.`carts` /* generated by server */",
        "CREATE TABLE shop.carts (\n  id INT UNSIGNED NOT NULL PRIMARY KEY,\n  customer_id INT UNSIGNED NOT NULL,\n"
        "  product_id INT UNSIGNED NOT NULL,\n  qty SMALLINT UNSIGNED NOT NULL DEFAULT 1,\n  added_at DATETIME NOT "
        "NULL\n) ENGINE=InnoDB",
    ]


def test_a_query_event_cut_short_is_one_error_row_with_its_bytes() -> None:
    path = FIXTURES / "sample" / "mysql-bin.000002"
    events, summary = framed(path)
    query = next(e for e in events if e["event_class"] == "query")
    cut = {**query, "body": query["body"][:12]}  # inside the post-header
    out = [
        r
        for b in query_rows(
            iter([batch([cut], QUERY_INPUT)]), to_arrow_schema(QUERIES_OUT, timezone="UTC"), fdes_of(summary)
        )
        for r in b.to_pylist()
    ]
    assert [(r["offset"], r["problem_code"], r["problem_severity"], r["event_type_name"]) for r in out] == [
        (query["offset"], "MALFORMED", "error", "QUERY")
    ]
    assert out[0]["body"] == cut["body"]
    assert out[0]["statement"] is None


def test_compressed_query_events_decode_to_the_statements_binlog_core_reads() -> None:
    path = FIXTURES / "compressed" / "mysql-bin.000003"  # MariaDB log_bin_compress: QUERY_COMPRESSED
    queries, out = queries_of(path)
    decoded = [item.body for item in decode_file(path) if isinstance(item.body, QueryEvent)]
    assert [(r["event_type_name"], r["statement"], r["kind"]) for r in out] == [
        (q["event_type_name"], body.statement, str(body.kind)) for q, body in zip(queries, decoded, strict=True)
    ]
    assert Counter(r["event_type_name"] for r in out) == {"QUERY_COMPRESSED": 15}
    assert out[0]["statement"].startswith("CREATE TABLE fixture.t_evolve")
