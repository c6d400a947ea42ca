"""The silver tasks' rules on small inputs, without Spark: the columns resolved at a map's position and
plan keys (:class:`pipelines.silver.write.Resolver`, the one definition), map columns as history
columns, the table-id lifecycle added up from the tasks' counts, and quarantine rows; plus the one
check that needs Spark: a plan key is the hash of the JSON Spark's ``to_json`` writes, so keys of maps
resolved before are kept.

Positions are those of one server's binlog: ``mysql-bin.1000000`` follows ``mysql-bin.999999``
(the sequence number decides, not the path).
"""

from __future__ import annotations

import hashlib
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.silver.write import (
    MapFacts,
    Resolver,
    merged_lifecycle,
    own_columns,
    plan_key,
    quarantine_rows,
    resolved,
)
from pipelines.staging import arrow_schema, conformed
from pipelines.tables import HISTORY_COLUMN, QUARANTINE, TABLE_ID_LIFECYCLE, TABLE_MAPS

A, B, C = "/l/mysql-bin.999999", "/l/mysql-bin.1000000", "/m/mysql-bin.000007"
SEQUENCE = {A: 999999, B: 1000000, C: 7}
S1, S2 = "/l/mysql-bin", "/m/mysql-bin"


def _map(
    file: str,
    offset: int,
    table: str,
    count: int,
    names: list[str] | None = None,
    shape_key: str | None = None,
    server: str = S1,
    primary_key: tuple[int, ...] = (),
) -> dict[str, Any]:
    """A decoded map; its shape key, unless given, from what a body fixes (table, columns, names, key)."""
    shape_key = shape_key or f"{table}/{count}/{names}/{primary_key}"
    columns = [
        {
            "position": i + 1,
            "name": n,
            "mysql_type": "int unsigned",
            "nullable": True,
            "charset": None,
            "collation": None,
        }
        for i, n in enumerate(names or [None] * count)
    ]
    return {
        "server": server, "file": file, "offset": offset, "inner_index": None, "schema_name": "shop",
        "table_name": table, "column_count": count, "column_names": names, "columns": columns,
        "primary_key": list(primary_key), "shape_key": shape_key,
    }  # fmt: skip


def _version(
    table: str, version: int, start: tuple[str, int] | None, end: tuple[str, int] | None, names: list[str] | None
) -> dict[str, Any]:
    columns = None if names is None else [
        {"position": i + 1, "name": n, "type": "int", "nullable": True, "charset": None, "collation": None,
         "default": None, "primary_key": None}
        for i, n in enumerate(names)
    ]  # fmt: skip
    source = "seed" if start is None else "ddl"
    server = S2 if start is not None and start[0] == C else S1
    at = {"sequence": None, "file": None, "offset": None, "inner_index": None}
    start_at = (
        at
        if start is None
        else {"sequence": SEQUENCE[start[0]], "file": start[0], "offset": start[1], "inner_index": None}
    )
    end_at = (
        at if end is None else {"sequence": SEQUENCE[end[0]], "file": end[0], "offset": end[1], "inner_index": None}
    )
    return {
        "server": server, "schema_name": "shop", "table_name": table, "version": version,
        **{f"valid_from_{k}": v for k, v in start_at.items()}, **{f"valid_to_{k}": v for k, v in end_at.items()},
        "columns": columns, "source": source, "statement": None, "fingerprint": None, "run_id": "r0",
    }  # fmt: skip


HISTORY = [
    _version("t", 1, None, (A, 500), ["id", "a"]),
    _version("t", 2, (A, 500), (B, 100), ["id", "a", "b"]),
    _version("t", 3, (B, 100), (B, 300), None),  # dropped
    _version("t", 4, (B, 300), None, ["k"]),  # re-created
    _version("u", 1, (A, 100), (A, 300), ["p", "q"]),
    _version("u", 2, (A, 300), None, ["p", "r"]),  # RENAME COLUMN q TO r
    _version("t", 1, (C, 10), None, ["x", "y"]),  # another server's table of the same name
]


def _maps_table(maps: list[dict[str, Any]]) -> pa.Table:
    """The maps as ``table_maps`` rows (the columns the decode gives, and ``server``)."""
    schema = arrow_schema(TABLE_MAPS)
    rows = [{**m, "columns": [{**c, "type": "LONG"} for c in m["columns"]]} for m in maps]
    return conformed(pa.Table.from_pylist(rows, schema=pa.schema([f for f in schema if f.name in rows[0]])), schema)


def resolve(maps: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    answers = resolved(_maps_table(maps), Resolver(HISTORY), SEQUENCE).to_pylist()
    one_by_one = [Resolver(HISTORY).resolve(m, SEQUENCE[m["file"]]) for m in maps]
    assert [(a["resolved_column_names"], a["plan_key"]) for a in answers] == [(r[1], r[4]) for r in one_by_one]
    return [
        (a["file"], a["offset"], a["resolved_column_names"], a["names_source"], a["history_version"]) for a in answers
    ]


def test_maps_without_names_take_the_columns_of_their_servers_version_in_force_with_a_matching_count() -> None:
    got = resolve(
        [
            _map(A, 400, "t", 2),  # the seed version
            _map(A, 500, "t", 3),  # the ALTER's own position: its version holds from there
            _map(A, 700, "t", 4),  # column count differs from the version in force: unresolved
            _map(B, 100, "t", 3),  # the DROP's position
            _map(B, 200, "t", 3),  # after the DROP
            _map(B, 400, "t", 1),  # the re-created table (B follows A: sequence 1000000 > 999999)
            _map(B, 600, "other", 1),  # a table the history does not know
            _map(C, 5, "t", 2, server=S2),  # before the other server's CREATE: S1's seed does not apply
            _map(C, 20, "t", 2, server=S2),  # the other server's own version
        ]
    )
    assert got == [
        (A, 400, ["id", "a"], "seed", 1),
        (A, 500, ["id", "a", "b"], "ddl", 2),
        (A, 700, None, None, None),
        (B, 100, None, None, None),
        (B, 200, None, None, None),
        (B, 400, ["k"], "ddl", 4),
        (B, 600, None, None, None),
        (C, 5, None, None, None),
        (C, 20, ["x", "y"], "ddl", 1),
    ]


def test_a_map_with_its_own_names_keeps_them_with_its_own_types_and_key() -> None:
    maps = [
        _map(B, 500, "t", 2, ["k2", "v"], primary_key=(1,)),  # FULL metadata: the history is not asked
        _map(B, 510, "other", 1, ["only"]),  # names but no key: the map tells there is none
        _map(B, 520, "other", 1),  # no names, no key: the key is unknown
    ]
    out = [Resolver(HISTORY).resolve(m, SEQUENCE[m["file"]]) for m in maps]
    assert [(names, source, version) for _c, names, source, version, _k in out] == [
        (["k2", "v"], "table_map", None),
        (["only"], "table_map", None),
        (None, None, None),
    ]
    assert out[0][0] == [
        {"position": 1, "name": "k2", "type": "int unsigned", "nullable": True, "charset": None, "collation": None,
         "default": None, "primary_key": True},
        {"position": 2, "name": "v", "type": "int unsigned", "nullable": True, "charset": None, "collation": None,
         "default": None, "primary_key": False},
    ]  # fmt: skip
    assert [c["primary_key"] for c in out[1][0]] == [False]
    assert [set(c) for c in own_columns(maps[2]["columns"], False, [])] == [set(HISTORY_COLUMN.names)]
    assert [c["primary_key"] for c in own_columns(maps[2]["columns"], False, [])] == [None]


def test_plan_keys_are_equal_exactly_when_shape_and_resolved_columns_are() -> None:
    maps = [
        _map(A, 200, "u", 2, shape_key="su"),  # (p, q)
        _map(A, 400, "u", 2, shape_key="su"),  # (p, r): another plan
        _map(B, 50, "u", 2, shape_key="su"),  # (p, r) in the next file, another table id: the same plan
        _map(A, 250, "u", 2, shape_key="su2"),  # (p, q) but another shape: another plan
        _map(B, 60, "u", 2, ["p", "r"], shape_key="su-named"),  # own names: types differ from the history's
    ]
    plan = {(m["file"], m["offset"]): Resolver(HISTORY).resolve(m, SEQUENCE[m["file"]])[4] for m in maps}
    assert plan[(A, 400)] == plan[(B, 50)]
    assert len({plan[(A, 200)], plan[(A, 400)], plan[(A, 250)], plan[(B, 60)]}) == 4
    assert all(len(key) == 32 for key in plan.values())


def test_a_plan_key_hashes_the_json_spark_writes_of_the_resolved_columns(spark: SparkSession) -> None:
    columns = [
        {"position": 1, "name": "id", "type": "int unsigned", "nullable": False, "charset": None, "collation": None,
         "default": None, "primary_key": True},
        {"position": 2, "name": 'n\u00e9 "q"\\\n\u001f\u2028ü', "type": "varchar(20)", "nullable": True,
         "charset": "utf8mb4", "collation": "utf8mb4_bin", "default": "'x'", "primary_key": False},
    ]  # fmt: skip
    frame = spark.createDataFrame([("shape", columns)], f"shape string, columns array<{HISTORY_COLUMN.simpleString()}>")
    (row,) = frame.select(F.sha2(F.concat("shape", F.to_json("columns")), 256).alias("key")).collect()
    assert plan_key("shape", columns) == row.key[:32]
    assert plan_key("shape", None) == hashlib.sha256(b"shape").hexdigest()[:32]


def test_the_lifecycle_flags_an_id_reused_for_another_table_or_shape_within_one_file_only() -> None:
    a, b = "/logs/bin.000001", "/logs/bin.000002"
    maps = [
        (a, "bin.000001", 100, 10, "shop", "orders", "f1", 300, 2),
        (a, "bin.000001", 400, 10, "shop", "orders", "f1", 500, 1),
        (a, "bin.000001", 900, 10, "shop", "items", "f9", None, 0),  # same id, another table (after FLUSH)
        (a, "bin.000001", 150, 11, "shop", "users", "u1", 300, 1),
        (a, "bin.000001", 600, 11, "shop", "users", "u2", 700, 4),  # same id and table, ALTERed shape
        (b, "bin.000002", 120, 10, "shop", "orders", "f1", 200, 3),  # id 10 again: another file, never mixed
    ]
    names = ["file", "file_name", "offset", "table_id", "schema_name", "table_name", "fingerprint", "in_force_until",
             "rows_events"]  # fmt: skip
    rows = [dict(zip(names, m, strict=True)) | {"inner_index": None, "run_id": "r1", "plan_key": "p",
            "column_names": ["c"], "body": b"", "fde_offset": 4, "resolved_columns": None} for m in maps]  # fmt: skip
    table = conformed(pa.Table.from_pylist(rows), arrow_schema(TABLE_MAPS))
    halves = [MapFacts(), MapFacts()]  # two tasks, each with some of the maps: their counts add up
    halves[0].add(table.slice(0, 3))
    halves[1].add(table.slice(3))
    out = merged_lifecycle([r for half in halves for r in half.lifecycle_rows()])
    assert set(out[0]) == set(TABLE_ID_LIFECYCLE.names)
    expected = [
        (a, 10, ["shop.items", "shop.orders"], 100, 900, 3, 3, None, ["f1", "f9"], True, True, "r1"),
        (a, 11, ["shop.users"], 150, 700, 2, 5, None, ["u1", "u2"], False, True, "r1"),
        (b, 10, ["shop.orders"], 120, 200, 1, 3, None, ["f1"], False, False, "r1"),
    ]
    keep = [n for n in TABLE_ID_LIFECYCLE.names if n != "file_name"]
    assert sorted(tuple(r[n] for n in keep) for r in out) == expected


def test_decoder_rows_with_a_problem_become_silver_quarantine_rows() -> None:
    decoded = pa.table(
        {
            "file": [A, A],
            "file_name": ["mysql-bin.999999"] * 2,
            "offset": [200, 300],
            "inner_index": [None, 2],
            "event_type_name": ["TABLE_MAP", "QUERY"],
            "problem_code": ["MALFORMED", "UNKNOWN_OPTIONAL_METADATA"],
            "problem_severity": ["error", "warning"],
            "problem_path": ["column 3", None],
            "problem_message": ["runs past", "kept"],
            "body": [b"b1", b"b2"],
        }
    )
    rows = quarantine_rows(decoded, "run-9")
    assert rows.column_names == QUARANTINE.names
    assert [tuple(r.values()) for r in rows.to_pylist()] == [
        ("silver", A, "mysql-bin.999999", 200, None, "TABLE_MAP", "MALFORMED", "error", "column 3", "runs past",
         b"b1", "run-9"),
        ("silver", A, "mysql-bin.999999", 300, 2, "QUERY", "UNKNOWN_OPTIONAL_METADATA", "warning", None, "kept",
         b"b2", "run-9"),
    ]  # fmt: skip
