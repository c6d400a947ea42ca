"""Python-side decoding for silver: map columns as MySQL type text, status variables."""

from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from binlog_core.charsets import collation_info
from binlog_core.constants import EventType
from binlog_core.decoder import decode_file
from binlog_core.events.query import QueryEvent, StatementKind
from binlog_core.framing import open_events
from binlog_core.table_map import TableMap
from pipelines.silver.ddl import SchemaRegistry
from pipelines.silver.decode import mysql_type, status_vars, table_map_rows
from pipelines.silver.stage import MAPS_OUT
from tests.fixtures.truth import FIXTURES

MARIADB_STORED_AS = {
    ("t_json_geo", "j"): ("json", "longtext"),  # MariaDB's JSON is an alias of LONGTEXT
    ("t_inet_uuid", "i4"): ("inet4", "binary(4)"),
    ("t_inet_uuid", "i6"): ("inet6", "binary(16)"),
    ("t_inet_uuid", "u"): ("uuid", "binary(16)"),
    ("t_inet_uuid", "u_nn"): ("uuid", "binary(16)"),
    ("t_evolved", "val"): ("json", "longtext"),
}


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
    path = sorted((FIXTURES / "full").glob("mysql-bin.0*"))[0]
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


def test_a_map_with_an_unknown_optional_field_decodes_and_gives_a_warning_row_beside_it() -> None:
    path = FIXTURES / "full" / "mysql-bin.000001"
    event = next(e for e in open_events(path) if e.type_code == EventType.TABLE_MAP)
    row = {
        "file": str(path),
        "file_name": path.name,
        "offset": event.offset,
        "inner_index": None,
        "body": event.body + bytes([14, 2]) + b"ab",  # optional field type 14 (unknown), 2 bytes
        "format_description": event.fde.to_json(),
    }
    schema = to_arrow_schema(MAPS_OUT)
    batch = pa.RecordBatch.from_pylist([row], schema=pa.schema([schema.field(n) for n in row]))
    out = [r for b in table_map_rows(iter([batch]), schema) for r in b.to_pylist()]
    assert [(r["problem_code"], r["problem_severity"], r["problem_path"]) for r in out] == [
        (None, None, None),
        ("UNKNOWN_OPTIONAL_METADATA", "warning", "optional metadata 14"),
    ]
    assert out[0]["unknown_optional"] == [{"field_type": 14, "value": b"ab"}]
    assert out[1]["body"] == row["body"]
