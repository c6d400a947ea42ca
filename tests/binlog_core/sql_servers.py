"""Helpers of the tests that run ``binlog-dump`` scripts on private MariaDB servers.

:func:`apply_script` feeds a script to the ``mariadb`` command-line client (as a user would);
:func:`table_contents` reads every user table of a server back, rows in a stable order, so two
servers compare with ``==``; :func:`dump_script` runs ``binlog-dump`` in-process into a file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from binlog_core.cli import main
from tests.harness.mariadb import MariaDBServer, find_program

SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")

Tables = dict[tuple[str, str], list[tuple[object, ...]]]


def mariadb_client() -> str:
    """The ``mariadb`` client program (a failure when it is missing: the server tests need it too)."""
    found = find_program("mariadb", "/usr/bin", "/usr/local/mysql/bin")
    if found is None:
        pytest.fail("the mariadb client is not installed (Debian's mariadb-client package)", pytrace=False)
    return found


def apply_script(server: MariaDBServer, script: Path) -> None:
    """Run ``script`` with the ``mariadb`` client against ``server``; fail with its errors if any."""
    with script.open("rb") as stdin:
        result = subprocess.run(
            [mariadb_client(), "--no-defaults", "-h127.0.0.1", f"-P{server.port}", "-uroot", "--batch"],
            stdin=stdin,
            capture_output=True,
            check=False,
            timeout=600,
        )
    assert result.returncode == 0, result.stderr.decode(errors="replace")


def table_contents(server: MariaDBServer) -> Tables:
    """Every row of every user table, ordered by all columns, keyed by ``(schema, table)``."""
    listed = ", ".join(f"'{name}'" for name in SYSTEM_SCHEMAS)
    tables = server.query(
        "SELECT table_schema, table_name FROM information_schema.tables "
        f"WHERE table_schema NOT IN ({listed}) AND table_type = 'BASE TABLE' ORDER BY 1, 2"
    )
    contents: Tables = {}
    for schema, table in tables:
        count = server.query(
            "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
            (schema, table),
        )[0][0]
        order = ", ".join(str(n) for n in range(1, int(count) + 1))
        contents[(str(schema), str(table))] = server.query(f"SELECT * FROM `{schema}`.`{table}` ORDER BY {order}")
    return contents


def column_lists(server: MariaDBServer) -> dict[tuple[str, str], list[tuple[object, ...]]]:
    """Each user table's columns: name, type, nullability, charset and collation, in order."""
    listed = ", ".join(f"'{name}'" for name in SYSTEM_SCHEMAS)
    columns: dict[tuple[str, str], list[tuple[object, ...]]] = {}
    for row in server.query(
        "SELECT table_schema, table_name, column_name, column_type, is_nullable, character_set_name, "
        f"collation_name FROM information_schema.columns WHERE table_schema NOT IN ({listed}) "
        "ORDER BY table_schema, table_name, ordinal_position"
    ):
        columns.setdefault((str(row[0]), str(row[1])), []).append(tuple(row[2:]))
    return columns


def dump_script(out: Path, *argv: str | Path) -> tuple[int, str]:
    """``binlog-dump -r OUT ARGV`` in-process; returns the exit status and the script's text."""
    status = main(["-r", str(out), *map(str, argv)])
    return status, out.read_text(encoding="utf-8")
